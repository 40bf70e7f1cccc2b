# The example family: declared as a family in benchmarks/ is (nb_family, cmake/NodebenchLayers.cmake),
# but TEST_ONLY: built into its own test binary, never into nodebench.
nb_family(example SOURCES example.cpp example_analysis.cpp THRESHOLDS thresholds.json TEST_ONLY)
nb_family_tests(example SOURCES test_example_family.cpp)
