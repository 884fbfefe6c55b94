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
