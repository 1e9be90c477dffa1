# Warning flags for every C target; RS_WERROR turns them into errors (CI sets it).
set(RS_WARNING_FLAGS
    -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes -Wpointer-arith
    -Wformat=2 -Wundef -Wimplicit-fallthrough -Wwrite-strings -Wnull-dereference
    -Wvla -Wno-unused-parameter)
add_compile_options("$<$<COMPILE_LANGUAGE:C>:${RS_WARNING_FLAGS}>")
if(RS_WERROR)
    add_compile_options("$<$<COMPILE_LANGUAGE:C>:-Werror>")
endif()
