# Hides an installed jsonschema (tests of the checks that must work without it: tests/CMakeLists.txt).
raise ImportError("jsonschema hidden by tests/data/no_jsonschema")
