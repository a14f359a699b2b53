// ow — the outerworld command line. Exit codes: 0 ok, 1 user error, 2 internal error.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli.h"
#include "uop/error.h"

namespace ow::cli {

namespace {
std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

bool parse_options(const std::string& cmd, const std::string& usage, po::options_description& opts,
                   const po::positional_options_description& pos, const Args& args, po::variables_map& vm) {
  opts.add_options()("help,h", "show this help");
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: ow " << cmd << " " << usage << "\n\n" << opts << "\n";
    return false;
  }
  try {
    po::notify(vm);
  } catch (const po::required_option& e) {
    // A positional argument is named as the usage shows it, not as its internal option.
    for (unsigned i = 0; i < pos.max_total_count() && i < 8; ++i)
      if ("--" + pos.name_for_position(i) == e.get_option_name())
        throw Error("ow " + cmd + ": missing " + upper(pos.name_for_position(i)) + " (usage: ow " + cmd + " " + usage.substr(0, usage.find('\n')) + ")");
    throw;
  }
  return true;
}

// PATH "-" is stdin, which can be read once per command.
std::string read_file(const std::string& path) {
  if (path == "-") {
    static bool used = false;
    if (used) throw Error("stdin ('-') can be read only once per command");
    used = true;
    std::string data((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    if (std::cin.bad()) throw Error("<stdin>: read failed");
    return data;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error(path + ": is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open file (" + std::strerror(errno) + ")");
  in.seekg(0, std::ios::end);
  auto size = in.tellg();
  if (size < 0) throw Error(path + ": cannot read file (not a regular file?)");
  if (size > (int64_t{1} << 30)) throw Error(path + ": file is larger than 1 GiB");
  std::string data(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(data.data(), size);
  if (!in) throw Error(path + ": read failed");
  return data;
}

void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  out << data;
  if (!out) throw Error(path + ": cannot write file");
}

namespace {
// The graph the command works on, so an internal error can save it for the bug report.
std::string g_graph_text, g_graph_path;
}  // namespace

ParsedGraph load_graph(const std::string& path, bool strict) {
  std::string text = read_file(path);
  g_graph_text = text, g_graph_path = path;
  ParsedGraph g = parse_graph(text, path);
  VerifyOptions opts;
  opts.strict = strict;
  verify_parsed(g, opts);
  // Fault injection, for the test of the bug report itself (tests/test_cli.cpp).
  if (const char* f = std::getenv("OW_FAULT"); f && std::string(f) == "internal") throw InternalError("OW_FAULT=internal after reading " + path);
  return g;
}

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
// it to a report (the input file may change or be a pipe).
int report_bug(const std::string& cmd, const Args& args, const std::string& what) {
  std::cerr << "ow " << cmd << ": " << what << "\n";
  if (g_graph_text.empty()) return 2;
  std::error_code ec;
  std::filesystem::path p = std::filesystem::temp_directory_path(ec) / ("ow-bug-" + std::to_string(getpid()) + ".uop");
  std::ofstream out(p, std::ios::binary);
  out << "# ow " << cmd;
  for (const std::string& a : args) out << " " << a;
  out << "\n# " << what.substr(0, what.find('\n')) << "\n# the graph, as read from " << g_graph_path << ":\n" << g_graph_text;
  if (out) std::cerr << "  the graph is saved in " << p.string() << "; please attach it to the report\n";
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
    } catch (const ow::Error& e) {
      std::cerr << e.what() << "\n";
      return 1;
    } catch (const boost::program_options::error& e) {
      std::cerr << "ow " << name << ": " << e.what() << " (see ow " << name << " --help)\n";
      return 1;
    } catch (const std::bad_alloc&) {
      std::cerr << "ow " << name << ": out of memory\n";
      return 2;
    } catch (const ow::InternalError& e) {  // its message says "internal error: ... (please report)"
      return report_bug(name, args, e.what());
    } catch (const std::exception& e) {
      return report_bug(name, args, std::string("internal error: ") + e.what() + " (please report)");
    }
  }
  std::cerr << "ow: unknown command '" << name << "'\n";
  usage(std::cerr);
  return 1;
}
