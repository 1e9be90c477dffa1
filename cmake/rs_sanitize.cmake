# RS_SANITIZE=address,undefined or thread: instrument every C file (not the GPU kernels).
set(RS_SANITIZE "" CACHE STRING "Sanitizers to build with (e.g. address,undefined or thread)")
if(RS_SANITIZE)
    add_compile_options("$<$<COMPILE_LANGUAGE:C>:-fsanitize=${RS_SANITIZE};-fno-omit-frame-pointer;-fno-sanitize-recover=all>")
    add_link_options(-fsanitize=${RS_SANITIZE})
    # -O1 and line tables only: what the sanitizers' documentation advises, and several times
    # faster to compile than -O2 -g with the instrumentation (stack traces keep their
    # file:line). gcc's truncation warnings see less at -O1 and flag cuts that are meant;
    # the plain -O2 build checks them.
    if(CMAKE_BUILD_TYPE STREQUAL "RelWithDebInfo")
        set(CMAKE_C_FLAGS_RELWITHDEBINFO "-O1 -g1 -DNDEBUG")
        add_compile_options("$<$<COMPILE_LANG_AND_ID:C,GNU>:-Wno-format-truncation>")
    endif()
    message(STATUS "ringside: sanitizers: ${RS_SANITIZE}")
endif()
