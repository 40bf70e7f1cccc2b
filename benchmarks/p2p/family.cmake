nb_family(p2p SOURCES p2p.cpp SHARED nccl)
