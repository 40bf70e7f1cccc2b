nb_family(burn SOURCES burn_family.cpp burn.cpp burn_rules.cpp burn_report.cpp KERNELS burn THRESHOLDS thresholds.json)
