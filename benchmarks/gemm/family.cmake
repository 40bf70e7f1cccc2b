nb_family(gemm SOURCES gemm.cpp gemm_run.cpp THRESHOLDS thresholds.json)
