if(NB_HAVE_CUDNN)
  nb_family(conv SOURCES conv.cpp conv_verify.cpp conv_analysis.cpp conv_advice.cpp SHARED cudnn common)
else()
  # What advise reads from its records is built anyway (result files of other nodes).
  nb_family(conv SOURCES conv_advice.cpp SHARED common)
  nb_family_not_built(conv "cuDNN not found (only what advise reads from its records is built)")
endif()
