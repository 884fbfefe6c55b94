# dplace_add_test(NAME SOURCE...): a GoogleTest binary linked to the core,
# registered with CTest one test case at a time.
function(dplace_add_test name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE dplace_core GTest::gtest
                        GTest::gtest_main GTest::gmock)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
endfunction()

# dplace_add_benchmark(NAME SOURCE...): a Google Benchmark binary.
function(dplace_add_benchmark name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE dplace_core benchmark::benchmark
                        benchmark::benchmark_main)
endfunction()

# dplace_add_registry_library(NAME SOURCE...): a library whose objects
# register themselves by name at static initialisation (placers, agents).
# Nothing references them by symbol, so the sources go into the static
# library NAME_impl, and NAME is an interface target that links it whole;
# link NAME, configure NAME_impl.
function(dplace_add_registry_library name)
  add_library(${name}_impl STATIC ${ARGN})
  add_library(${name} INTERFACE)
  target_link_libraries(${name} INTERFACE
    "$<LINK_LIBRARY:WHOLE_ARCHIVE,${name}_impl>")
endfunction()
