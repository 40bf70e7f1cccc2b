nb_family(peak SOURCES peak.cpp peak_rules.cpp KERNELS peak)
