if(NB_HAVE_CUDNN)
  nb_family(train SOURCES train.cpp train_analysis.cpp train_advice.cpp SHARED resnet50 common KERNELS train)
else()
  # What advise reads from its records is built anyway (result files of other nodes).
  nb_family(train SOURCES train_advice.cpp SHARED common)
  nb_family_not_built(train "cuDNN not found (only what advise reads from its records is built)")
endif()
