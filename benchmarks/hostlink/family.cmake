nb_family(hostlink SOURCES hostlink.cpp THRESHOLDS thresholds.json)
