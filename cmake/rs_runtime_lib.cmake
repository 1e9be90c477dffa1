# rs_runtime_lib(PREFIX LIBRARY DEFAULT_PACKAGE): for a library the binary loads at run time
# (dlopen, backend/core/dynlib.h) instead of linking it, sets PREFIX_SONAME (the name the
# loader is asked for first), PREFIX_PATH (the file found here, asked for next) and
# PREFIX_PACKAGE (the Debian package that holds it, for the not-found message and the
# package's Depends; DEFAULT_PACKAGE where dpkg does not know the file). LIBRARY is what the
# linker would take: the shared library itself, a link to it, or a GNU ld script naming it
# (INPUT(libfoo.so.1), as libc.so is, and as sysroot.sh writes for the target's own libraries).

# The SONAME in the dynamic section of the ELF file at path, or "" (not ELF, no objdump).
function(rs_elf_soname out path)
    set(soname "")
    if(CMAKE_OBJDUMP)
        execute_process(COMMAND "${CMAKE_OBJDUMP}" -p "${path}" OUTPUT_VARIABLE dump
                        ERROR_QUIET RESULT_VARIABLE rc)
        if(rc EQUAL 0 AND dump MATCHES "SONAME +([^ \t\r\n]+)")
            set(soname "${CMAKE_MATCH_1}")
        endif()
    endif()
    set(${out} "${soname}" PARENT_SCOPE)
endfunction()

function(rs_runtime_lib prefix library default_package)
    get_filename_component(real "${library}" REALPATH)
    rs_elf_soname(soname "${real}")
    if(NOT soname)
        # a linker script: the first library it names, a path or a name beside it
        file(READ "${real}" script LIMIT 4096)
        if(script MATCHES "(INPUT|GROUP)[ \t]*\\([ \t]*([^ \t\r\n()]+)")
            set(named "${CMAKE_MATCH_2}")
            get_filename_component(dir "${real}" DIRECTORY)
            if(IS_ABSOLUTE "${named}" AND EXISTS "${named}")
                get_filename_component(real "${named}" REALPATH)
            elseif(EXISTS "${dir}/${named}")
                get_filename_component(real "${dir}/${named}" REALPATH)
            else()
                set(real "${named}") # only on the target machine: its soname is all we have
            endif()
            rs_elf_soname(soname "${real}")
            if(NOT soname)
                get_filename_component(soname "${named}" NAME)
            endif()
        endif()
    endif()
    if(NOT soname)
        message(FATAL_ERROR "${library}: neither a shared library with a SONAME nor a linker "
                            "script naming one (is objdump installed? binutils)")
    endif()
    set(package "${default_package}")
    find_program(RS_DPKG_QUERY dpkg-query)
    if(RS_DPKG_QUERY AND IS_ABSOLUTE "${real}")
        # as dpkg lists it: under /usr, or (merged /usr) where the package put it
        string(REGEX REPLACE "^/usr/" "/" unmerged "${real}")
        foreach(path "${real}" "${unmerged}")
            execute_process(COMMAND "${RS_DPKG_QUERY}" -S "${path}" OUTPUT_VARIABLE owner
                            ERROR_QUIET RESULT_VARIABLE rc)
            if(rc EQUAL 0 AND owner MATCHES "^([^:, \t\r\n]+)")
                set(package "${CMAKE_MATCH_1}")
                break()
            endif()
        endforeach()
    endif()
    set(${prefix}_SONAME "${soname}" PARENT_SCOPE)
    set(${prefix}_PATH "${real}" PARENT_SCOPE)
    set(${prefix}_PACKAGE "${package}" PARENT_SCOPE)
    message(STATUS "ringside: ${soname} loaded at run time (${real}; package ${package})")
endfunction()
