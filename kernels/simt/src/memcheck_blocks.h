// Memcheck's record of its guarded memory (memcheck.h): live blocks, the quarantine of freed ones,
// the dynamic shared memory of the running block, and how an address falls among them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace simt::detail {

enum class AddressKind : std::uint8_t { inside, out_of_bounds, freed, unknown };

// Where `addr` falls: in or around a live guarded block (or the running block's dynamic shared
// memory), in a quarantined one, or nowhere memcheck knows; with the words that say so, relative to
// the memory ("4 bytes past the end of a 256-byte block").
struct AddressPlace {
  AddressKind kind = AddressKind::unknown;
  std::string words;
};
AddressPlace place_of(std::uintptr_t addr);

}  // namespace simt::detail
