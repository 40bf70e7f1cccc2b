#include "app/commands.hpp"

#include <type_traits>

namespace nb {

int dispatch(const Command& cmd) {
  return std::visit(
      [&](const auto& c) -> int {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, ListCommand>) return cmd_list(c);
        else if constexpr (std::is_same_v<T, RunCommand>) return cmd_run(c, cmd.argv);
        else if constexpr (std::is_same_v<T, EnvCommand>) return cmd_env(c);
        else if constexpr (std::is_same_v<T, DoctorCommand>) return cmd_doctor(c);
        else if constexpr (std::is_same_v<T, ValidateCommand>) return cmd_validate(c, cmd.argv);
        else if constexpr (std::is_same_v<T, MonitorCommand>) return cmd_monitor(c);
        else if constexpr (std::is_same_v<T, AdviseCommand>) return cmd_advise(c, cmd.argv);
        else if constexpr (std::is_same_v<T, FatbinCommand>) return cmd_fatbin(c);
        else if constexpr (std::is_same_v<T, BurnCommand>) return cmd_burn(c, cmd.argv);
        else return cmd_frameworks(c);
      },
      cmd.what);
}

}  // namespace nb
