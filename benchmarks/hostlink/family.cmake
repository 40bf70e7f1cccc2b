nb_family(hostlink SOURCES hostlink.cpp)
