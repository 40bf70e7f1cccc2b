// `nodebench advise RESULT.json... [options]` (docs/ADVISE.md): reads result files, predicts
// data-parallel training with the model of advise/advise.hpp, prints a table and the
// recommendation, and with --json writes them as a document (schema "nodebench.advise").
// Bad input exits 2.
#pragma once
#include "app/cli.hpp"

namespace nb {

int cmd_advise(const Command& cmd);

}  // namespace nb
