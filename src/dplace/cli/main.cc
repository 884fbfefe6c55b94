#include <iostream>

#include "dplace/cli/cli.h"

int main(int argc, char** argv) {
  return dplace::RunCli(argc, argv, std::cout, std::cerr);
}
