# RS_SANITIZE=address,undefined or thread: instrument every C file (not the GPU kernels).
set(RS_SANITIZE "" CACHE STRING "Sanitizers to build with (e.g. address,undefined or thread)")
if(RS_SANITIZE)
    add_compile_options("$<$<COMPILE_LANGUAGE:C>:-fsanitize=${RS_SANITIZE};-fno-omit-frame-pointer;-fno-sanitize-recover=all>")
    add_link_options(-fsanitize=${RS_SANITIZE})
    message(STATUS "ringside: sanitizers: ${RS_SANITIZE}")
endif()
