nb_family(p2p SOURCES p2p.cpp p2p_copy.cpp p2p_checks.cpp p2p_link.cpp THRESHOLDS thresholds.json)
