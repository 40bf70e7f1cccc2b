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
    return nb::dispatch(*p.command);
  } catch (const std::exception& e) {
    std::cerr << "nodebench: " << e.what() << "\n";
    return nb::kExitCaseFailed;
  }
}
