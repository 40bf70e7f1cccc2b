# The bucket and accumulation arithmetic (train_dp_plan) is pure and unit-tested on any build;
# the step itself needs cuDNN (the ResNet-50 step) and runs its all-reduce through NCCL.
if(NB_HAVE_CUDNN)
  nb_family(train_dp SOURCES train_dp_plan.cpp train_dp_engine.cpp train_dp.cpp train_dp_advice.cpp SHARED resnet50 nccl KERNELS train)
else()
  nb_family(train_dp SOURCES train_dp_plan.cpp train_dp_advice.cpp)
  nb_family_not_built(train_dp "cuDNN not found (only its bucket arithmetic and what advise reads are built)")
endif()
