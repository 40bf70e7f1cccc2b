nb_family(gemm SOURCES gemm.cpp)
