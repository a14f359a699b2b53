// ow cases: the reference cases (tinygrad's outerworld tests) as graphs.
#include <filesystem>
#include <iostream>

#include "cases.h"
#include "cli.h"
#include "uop/error.h"

namespace ow::cli {

namespace {

int cmd_cases(const Args& args) {
  po::options_description opts("options");
  opts.add_options()("name", po::value<std::string>(), "print this case's graph")(
      "write", po::value<std::string>(), "write every case to DIR/NAME.uop")(
      "check", po::value<std::string>(), "exit 1 unless DIR/NAME.uop equals what the API builds, for every case");
  po::positional_options_description pos;
  pos.add("name", 1);
  po::variables_map vm;
  if (!parse_options("cases", "[NAME] [--write DIR] [--check DIR]", opts, pos, args, vm)) return 0;
  if (vm.count("name")) {
    std::cout << print_graph(cases::build(vm["name"].as<std::string>()));
    return 0;
  }
  if (vm.count("write")) {
    std::error_code ec;
    std::filesystem::create_directories(vm["write"].as<std::string>(), ec);
    if (ec) throw Error(vm["write"].as<std::string>() + ": cannot create directory (" + ec.message() + ")");
    for (const std::string& n : cases::names()) write_file(vm["write"].as<std::string>() + "/" + n + ".uop", print_graph(cases::build(n)));
    return 0;
  }
  if (vm.count("check")) {
    int bad = 0;
    for (const std::string& n : cases::names()) {
      std::string path = vm["check"].as<std::string>() + "/" + n + ".uop";
      if (!std::filesystem::exists(path) || read_file(path) != print_graph(cases::build(n))) {
        std::cerr << path << ": differs from what the Tensor API builds (regenerate with ow cases --write)\n";
        ++bad;
      }
    }
    return bad ? 1 : 0;
  }
  for (const std::string& n : cases::names()) std::cout << n << "\n";
  return 0;
}

}  // namespace

std::vector<Command> case_commands() { return {{"cases", "list, print or write the reference cases", cmd_cases}}; }

}  // namespace ow::cli
