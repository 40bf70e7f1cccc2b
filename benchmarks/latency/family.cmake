nb_family(latency SOURCES latency.cpp)
