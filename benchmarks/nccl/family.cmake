nb_family(nccl SOURCES nccl.cpp nccl_driver.cpp nccl_settings.cpp SHARED nccl)
