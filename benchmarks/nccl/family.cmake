nb_family(nccl SOURCES nccl.cpp nccl_driver.cpp nccl_buffers.cpp nccl_output.cpp nccl_settings.cpp nccl_advice.cpp SHARED nccl THRESHOLDS thresholds.json)
