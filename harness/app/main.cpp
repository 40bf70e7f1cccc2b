#include <iostream>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "base/exit_codes.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  const nb::ParseOutcome p = nb::parse_cli(args);
  std::cout << p.out;
  std::cerr << p.err;
  if (!p.command) return p.exit_code;
  try {
    switch (p.command->kind) {
      case nb::CommandKind::list: return nb::cmd_list(*p.command);
      case nb::CommandKind::run: return nb::cmd_run(*p.command);
      case nb::CommandKind::env: return nb::cmd_env(*p.command);
      case nb::CommandKind::doctor:
        return p.command->validate.doctor_from.empty() ? nb::cmd_doctor(*p.command) : nb::cmd_doctor_from(*p.command);
      case nb::CommandKind::validate: return nb::cmd_validate(*p.command);
      case nb::CommandKind::monitor: return nb::cmd_monitor(*p.command);
      case nb::CommandKind::advise: return nb::cmd_advise(*p.command);
    }
  } catch (const std::exception& e) {
    std::cerr << "nodebench: " << e.what() << "\n";
    return nb::kExitCaseFailed;
  }
  return nb::kExitOk;
}
