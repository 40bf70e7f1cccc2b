nb_family(peak SOURCES peak.cpp KERNELS peak)
