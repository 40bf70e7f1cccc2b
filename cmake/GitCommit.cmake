# Script mode (cmake -DSRC=<source dir> -DOUT=<header> -P GitCommit.cmake), run on every build by
# the nb_git_commit target: writes NODEBENCH_GIT_COMMIT (short hash, "-dirty" when tracked files
# differ from it, "unknown" outside a git checkout) into OUT, touching it only when it changes,
# so that a commit after configuring shows in the next build and an unchanged one rebuilds nothing.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY "${SRC}"
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY "${SRC}"
                OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT commit)
  set(commit "unknown")
elseif(dirty)
  string(APPEND commit "-dirty")
endif()
file(WRITE "${OUT}.tmp" "// Generated on every build by cmake/GitCommit.cmake: do not edit.\n#pragma once\n#define NODEBENCH_GIT_COMMIT \"${commit}\"\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
