// The declaration sites of locals without an initializer that kernels reached under a poison
// (poison_local), noted per launch: verify singles each out (Config::poison_site) to find which
// local a stage read before writing it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace simt::detail {

// The singled-out site of the running launch's Config::poison_site, set with g_local_poison.
void set_local_poison_site(std::uint64_t site);
// "local `NAME` declared without an initializer at FILE:LINE", one per site reached since the
// last call, in the order first reached.
std::vector<std::string> take_local_sites();

}  // namespace simt::detail
