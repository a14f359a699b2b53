// The command line's plumbing (cli.h): option parsing with --help, reading and writing files,
// loading a graph (kept for ow.cpp's bug report).
#include <cerrno>
#include <cstdlib>
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

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) out.push_back(t);
  return out;
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
GraphSource g_graph;  // the graph the command works on, so an internal error can save it
}  // namespace

const GraphSource& last_graph() { return g_graph; }

ParsedGraph load_graph(const std::string& path, bool strict) {
  std::string text = read_file(path);
  g_graph = {text, path};
  ParsedGraph g = parse_graph(text, path);
  VerifyOptions opts;
  opts.strict = strict;
  verify_parsed(g, opts);
  // Fault injection, for the test of the bug report itself (tests/tools/test_cli.cpp).
  if (const char* f = std::getenv("OW_FAULT"); f && std::string(f) == "internal") throw InternalError("OW_FAULT=internal after reading " + path);
  return g;
}

}  // namespace ow::cli
