// Reads the running executable's .symtab once (kernels/sim/elf_symbols.h).
#include "kernels/sim/elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>

#include "kernels/sim/builtins.h"

namespace nanoserve::sim {
namespace {

struct Symbol {
  std::string name;
  std::uint64_t value = 0;
  std::uint64_t size = 0;
};

struct SymbolTable {
  std::unordered_map<std::uint64_t, std::string> functions;  // st_value -> mangled name
  std::vector<Symbol> locals;  // `_ZZ…` objects (function-local statics), sorted by name
  std::vector<Symbol> guards;  // `_ZGV…` TLS objects
  bool has_thread_idx = false;
  std::uint64_t thread_idx_value = 0;  // st_value of the TLS symbol `threadIdx`
  std::uintptr_t load_base = 0;        // where the executable is mapped (PIE)
};

int find_base(dl_phdr_info* info, std::size_t, void* data) {
  *static_cast<std::uintptr_t*>(data) = info->dlpi_addr;
  return 1;  // the first object is the executable
}

void read_symbols(const unsigned char* image, std::size_t size, SymbolTable& table) {
  if (size < sizeof(Elf64_Ehdr) || std::memcmp(image, ELFMAG, SELFMAG) != 0 ||
      image[EI_CLASS] != ELFCLASS64) {
    return;
  }
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(image);
  if (eh->e_shoff == 0 || eh->e_shoff + std::uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr) > size) {
    return;
  }
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(image + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; ++i) {
    const Elf64_Shdr& symtab = sections[i];
    if (symtab.sh_type != SHT_SYMTAB || symtab.sh_link >= eh->e_shnum) continue;
    const Elf64_Shdr& strtab = sections[symtab.sh_link];
    if (symtab.sh_offset + symtab.sh_size > size || strtab.sh_offset + strtab.sh_size > size) {
      return;
    }
    const auto* syms = reinterpret_cast<const Elf64_Sym*>(image + symtab.sh_offset);
    const char* names = reinterpret_cast<const char*>(image + strtab.sh_offset);
    const std::size_t count = symtab.sh_size / sizeof(Elf64_Sym);
    for (std::size_t s = 0; s < count; ++s) {
      const Elf64_Sym& sym = syms[s];
      if (sym.st_name >= strtab.sh_size) continue;
      const char* name = names + sym.st_name;
      const int type = ELF64_ST_TYPE(sym.st_info);
      if (type == STT_FUNC && sym.st_value != 0) {
        table.functions.emplace(sym.st_value, name);
      } else if ((type == STT_TLS || type == STT_OBJECT) && std::strncmp(name, "_ZZ", 3) == 0) {
        table.locals.push_back({name, sym.st_value, sym.st_size});
      } else if (type == STT_TLS && std::strncmp(name, "_ZGV", 4) == 0) {
        table.guards.push_back({name, sym.st_value, sym.st_size ? sym.st_size : 1});
      } else if (type == STT_TLS && std::strcmp(name, "threadIdx") == 0) {
        table.has_thread_idx = true;
        table.thread_idx_value = sym.st_value;
      }
    }
  }
  std::sort(table.locals.begin(), table.locals.end(),
            [](const Symbol& a, const Symbol& b) { return a.name < b.name; });
}

const SymbolTable& symbols() {
  static const SymbolTable table = [] {
    SymbolTable t;
    dl_iterate_phdr(&find_base, &t.load_base);
    const int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return t;
    struct stat st {};
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
      void* image = mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE,
                         fd, 0);
      if (image != MAP_FAILED) {
        read_symbols(static_cast<const unsigned char*>(image),
                     static_cast<std::size_t>(st.st_size), t);
        munmap(image, static_cast<std::size_t>(st.st_size));
      }
    }
    close(fd);
    return t;
  }();
  return table;
}

}  // namespace

std::size_t static_shared_bytes(const void* kernel) {
  const SymbolTable& t = symbols();
  const auto address = reinterpret_cast<std::uintptr_t>(kernel);
  const auto it = t.functions.find(address - t.load_base);
  if (it == t.functions.end() || it->second.compare(0, 2, "_Z") != 0) return 0;
  // `_Z<encoding>` -> its local statics `_ZZ<encoding>E<name>`.
  const std::string prefix = "_ZZ" + it->second.substr(2) + "E";
  std::size_t bytes = 0;
  auto local = std::lower_bound(t.locals.begin(), t.locals.end(), prefix,
                                [](const Symbol& s, const std::string& p) { return s.name < p; });
  for (; local != t.locals.end() && local->name.compare(0, prefix.size(), prefix) == 0; ++local) {
    bytes += local->size;
  }
  return bytes;
}

std::vector<AddressRange> tls_guard_ranges() {
  const SymbolTable& t = symbols();
  std::vector<AddressRange> ranges;
  if (!t.has_thread_idx) return ranges;
  const auto anchor = reinterpret_cast<std::uintptr_t>(&threadIdx);
  for (const Symbol& g : t.guards) {
    const std::uintptr_t begin = anchor + (g.value - t.thread_idx_value);
    ranges.push_back({begin, begin + g.size});
  }
  return ranges;
}

}  // namespace nanoserve::sim
