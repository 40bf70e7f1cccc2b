nb_family(hostlink SOURCES hostlink.cpp hostlink_advice.cpp THRESHOLDS thresholds.json)
