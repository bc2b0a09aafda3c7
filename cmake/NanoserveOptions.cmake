# Compiler flags shared by every target of the project (warnings, sanitizers, backend).

# nanoserve_project_flags(<target>): warnings for code we own (not for third-party headers).
function(nanoserve_project_flags target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wshadow -Wnon-virtual-dtor>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${NANOSERVE_WERROR}>>:-Werror>)
endfunction()

if(NANOSERVE_SANITIZE)
  # Applied globally so that every library and test shares one sanitizer runtime.
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
  add_compile_definitions(NANOSERVE_ASAN=1)
endif()

if(NANOSERVE_BACKEND STREQUAL "cuda")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 86 89 90)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  # Static cudart and libstdc++ make the binaries portable to a GPU machine that lacks
  # this machine's shared libraries (DEVELOPERS.md, GPU section).
  set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
  add_link_options(-static-libstdc++ -static-libgcc)
  add_compile_definitions(NANOSERVE_BACKEND_CUDA=1)
elseif(NANOSERVE_BACKEND STREQUAL "sim")
  add_compile_definitions(NANOSERVE_BACKEND_SIM=1)
else()
  message(FATAL_ERROR "NANOSERVE_BACKEND must be 'sim' or 'cuda', got '${NANOSERVE_BACKEND}'")
endif()

if(NANOSERVE_FUZZ)
  # Instrument the libraries the fuzzers link so that coverage guides them into the loaders.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
