// ow — the outerworld command line. Exit codes: 0 ok, 1 user error, 2 internal error.
#include <unistd.h>

#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli.h"
#include "uop/error.h"
#include "uop/files.h"

namespace ow::cli {

namespace {

std::vector<Command> all_commands() {
  std::vector<Command> cmds = graph_commands();
  for (auto& c : run_commands()) cmds.push_back(c);
  for (auto& c : case_commands()) cmds.push_back(c);
  for (auto& c : bench_commands()) cmds.push_back(c);
  for (auto& c : lower_commands()) cmds.push_back(c);
  for (auto& c : fuzz_commands()) cmds.push_back(c);
  for (auto& c : explain_commands()) cmds.push_back(c);
  for (auto& c : report_commands()) cmds.push_back(c);
  for (auto& c : step_commands()) cmds.push_back(c);
  for (auto& c : grad_commands()) cmds.push_back(c);
  for (auto& c : serve_commands()) cmds.push_back(c);
  return cmds;
}

// Exit status 2: a bug of outerworld. The message, and the graph saved where the user can attach
// it to a report (the input file may change or be a pipe): a new file of an unpredictable name in
// the temporary directory, readable by this user only (the directory is everyone's: a predictable
// name could be a link planted there to a file ow would overwrite).
int report_bug(const std::string& cmd, const Args& args, const std::string& what) {
  std::cerr << "ow " << cmd << ": " << what << "\n";
  const GraphSource& graph = last_graph();
  if (graph.text.empty()) return 2;
  std::string text = "# ow " + cmd;
  for (const std::string& a : args) text += " " + a;
  text += "\n# " + what.substr(0, what.find('\n')) + "\n# the graph, as read from " + graph.path + ":\n" + graph.text;
  std::error_code ec;
  std::string dir = std::filesystem::temp_directory_path(ec).string();
  try {
    std::string p = create_temp_file(ec ? "/tmp" : dir, "ow-bug-" + std::to_string(getpid()) + "-", ".uop", text);
    std::cerr << "  the graph is saved in " << p << "; please attach it to the report\n";
  } catch (const Error& e) {
    std::cerr << "  the graph could not be saved: " << e.what() << "\n";
  }
  return 2;
}

void usage(std::ostream& os) {
  os << "usage: ow <command> [options]   (ow <command> --help for details)\n\ncommands:\n";
  for (const Command& c : all_commands()) os << "  " << c.name << std::string(10 - std::min<size_t>(c.name.size(), 9), ' ') << c.summary << "\n";
}

}  // namespace
}  // namespace ow::cli

int main(int argc, char** argv) {
  using namespace ow::cli;
  if (argc < 2) {
    usage(std::cerr);
    return 1;
  }
  std::string name = argv[1];
  if (name == "--version" || name == "-V") {
    std::cout << "ow (outerworld) " << OW_VERSION << "\n";
    return 0;
  }
  Args args(argv + 2, argv + argc);
  if (name == "help" && !args.empty()) {  // ow help run == ow run --help
    name = args[0];
    args = {"--help"};
  } else if (name == "--help" || name == "-h" || name == "help") {
    usage(std::cout);
    return 0;
  }
  for (const Command& c : all_commands()) {
    if (c.name != name) continue;
    try {
      return c.run(args);
    } catch (const ow::InternalError& e) {  // its message says "internal error: ... (please report)"
      return report_bug(name, args, e.what());
    } catch (const ow::Error& e) {
      std::cerr << e.what() << "\n";
      return 1;
    } catch (const boost::program_options::error& e) {
      std::cerr << "ow " << name << ": " << e.what() << " (see ow " << name << " --help)\n";
      return 1;
    } catch (const std::bad_alloc&) {
      std::cerr << "ow " << name << ": out of memory\n";
      return 2;
    } catch (const std::exception& e) {
      return report_bug(name, args, std::string("internal error: ") + e.what() + " (please report)");
    }
  }
  std::cerr << "ow: unknown command '" << name << "'\n";
  usage(std::cerr);
  return 1;
}
