// sixfold: plan, predict, simulate, run and validate LLM training layouts.
#include "tools/cli/cli.hpp"

int main(int argc, char** argv) { return sixfold::cli::run_cli(argc, argv); }
