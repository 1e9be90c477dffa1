# rs_add_test(NAME <name> SOURCES <files...> LIBS <libs...> [TSAN])
# One Criterion binary per module; ctest runs it with its summary printed.
pkg_check_modules(CRITERION QUIET IMPORTED_TARGET criterion)
if(NOT CRITERION_FOUND)
    # criterion.pc lists private dependencies (libgit2, nanomsg, libffi) whose .pc files a
    # minimal sysroot lacks; the library and header are all a test binary needs.
    find_library(RS_CRITERION_LIB criterion)
    find_path(RS_CRITERION_INCLUDE criterion/criterion.h)
    if(NOT RS_CRITERION_LIB OR NOT RS_CRITERION_INCLUDE)
        message(FATAL_ERROR "Criterion not found: install libcriterion-dev (or -DBUILD_TESTING=OFF)")
    endif()
    add_library(PkgConfig::CRITERION UNKNOWN IMPORTED)
    set_target_properties(PkgConfig::CRITERION PROPERTIES IMPORTED_LOCATION ${RS_CRITERION_LIB}
                          INTERFACE_INCLUDE_DIRECTORIES ${RS_CRITERION_INCLUDE})
endif()
if(NOT TARGET check)
    add_custom_target(check COMMAND ${CMAKE_CTEST_COMMAND} -V --output-on-failure
                      WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
endif()
function(rs_add_test)
    cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS" ${ARGN})
    add_executable(${T_NAME} ${T_SOURCES})
    target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} rs_testsupport PkgConfig::CRITERION)
    target_compile_definitions(${T_NAME} PRIVATE
        RS_FIXTURES="${CMAKE_SOURCE_DIR}/tests/fixtures"
        RS_BINARY_DIR="${CMAKE_BINARY_DIR}")
    # a TAP report beside the build: scripts/dev.sh names every skipped test from these
    file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/tap)
    add_test(NAME ${T_NAME} COMMAND ${T_NAME} --jobs 2 --tap=${CMAKE_BINARY_DIR}/tap/${T_NAME}.tap)
    set_tests_properties(${T_NAME} PROPERTIES
        ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0;UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1;TSAN_OPTIONS=halt_on_error=1"
        FAIL_REGULAR_EXPRESSION "ERROR: (AddressSanitizer|LeakSanitizer|ThreadSanitizer)|runtime error:|WARNING: ThreadSanitizer"
        TIMEOUT 300)
    add_dependencies(check ${T_NAME})
endfunction()
