nb_family(nccl SOURCES nccl.cpp nccl_driver.cpp SHARED nccl)
