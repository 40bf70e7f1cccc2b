nb_family(memory SOURCES memory.cpp KERNELS memory)
