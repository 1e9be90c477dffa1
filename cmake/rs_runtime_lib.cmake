# rs_runtime_lib(PREFIX LIBRARY DEFAULT_PACKAGE): for a library the binary loads at run time
# (dlopen, backend/core/dynlib.h) instead of linking it, sets PREFIX_SONAME (the name the
# loader is asked for first), PREFIX_PATH (the file found here, asked for next) and
# PREFIX_PACKAGE (the Debian package that holds it, for the not-found message and the
# package's Depends; DEFAULT_PACKAGE where dpkg does not know the file).
function(rs_runtime_lib prefix library default_package)
    get_filename_component(real "${library}" REALPATH)
    set(soname "")
    if(CMAKE_OBJDUMP)
        execute_process(COMMAND "${CMAKE_OBJDUMP}" -p "${real}" OUTPUT_VARIABLE dump
                        ERROR_QUIET RESULT_VARIABLE rc)
        if(rc EQUAL 0 AND dump MATCHES "SONAME +([^ \t\r\n]+)")
            set(soname "${CMAKE_MATCH_1}")
        endif()
    endif()
    if(NOT soname)
        get_filename_component(soname "${real}" NAME)
    endif()
    set(package "${default_package}")
    find_program(RS_DPKG_QUERY dpkg-query)
    if(RS_DPKG_QUERY)
        execute_process(COMMAND "${RS_DPKG_QUERY}" -S "${real}" OUTPUT_VARIABLE owner
                        ERROR_QUIET RESULT_VARIABLE rc)
        if(rc EQUAL 0 AND owner MATCHES "^([^:, \t\r\n]+)")
            set(package "${CMAKE_MATCH_1}")
        endif()
    endif()
    set(${prefix}_SONAME "${soname}" PARENT_SCOPE)
    set(${prefix}_PATH "${real}" PARENT_SCOPE)
    set(${prefix}_PACKAGE "${package}" PARENT_SCOPE)
    message(STATUS "ringside: ${soname} loaded at run time (${real}; package ${package})")
endfunction()
