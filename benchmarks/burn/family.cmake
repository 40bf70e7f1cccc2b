nb_family(burn SOURCES burn.cpp burn_rules.cpp KERNELS burn THRESHOLDS thresholds.json)
