// A small line editor for interactive prompts (ow step): cursor movement, history (Up/Down,
// kept in memory and appended to a history file), Tab completion and Ctrl-C to clear the line.
//
// Why built in rather than a library: GNU readline is GPL and outerworld is MIT; libedit would
// be one more system package for a feature that needs ~300 lines, and its own raw-mode and
// signal handling would have to be reconciled with ow step's SIGINT handler (Ctrl-C during
// `continue`). Here the terminal is in raw mode only while a line is being read, so Ctrl-C
// at the prompt is just a key (it clears the line) and during evaluation it is SIGINT.
//
// Keys: printable characters insert; Left/Right, Home/End (also Ctrl-A/E, Ctrl-B/F); Backspace,
// Delete (and Ctrl-D on a non-empty line); Ctrl-K/U kill to the end/start, Ctrl-W the word
// before the cursor; Up/Down (Ctrl-P/N) walk the history; Tab completes the word before the
// cursor; Ctrl-C abandons the line; Ctrl-D on an empty line is end of input; Enter accepts.
// Lines are single-row ASCII: a line wider than the terminal redraws poorly, nothing worse.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ow::cli {

class LineEditor {
 public:
  // The words that may stand at `word_start` of `line` (the text before the cursor). The
  // editor keeps those that start with what is typed there.
  using Completer = std::function<std::vector<std::string>(const std::string& line, size_t word_start)>;

  // Reads keys from in_fd and draws on out_fd (both a terminal). history_file: where lines are
  // appended and the previous sessions' history is loaded from ("" for none).
  LineEditor(int in_fd, int out_fd, std::string history_file = "");

  void set_completer(Completer c) { complete_ = std::move(c); }

  // One edited line (without the newline), or nullopt at end of input. Non-blank lines are
  // added to the history.
  std::optional<std::string> read_line(const std::string& prompt);

  const std::vector<std::string>& history() const { return history_; }

 private:
  enum class Key { Other, Up, Down, Left, Right, Home, End, Delete };

  int in_, out_;
  std::string history_file_;
  std::vector<std::string> history_;
  Completer complete_;

  // The line being edited.
  std::string prompt_, buf_;
  size_t pos_ = 0;
  size_t hist_pos_ = 0;  // index into history_; history_.size() is the line being typed
  std::string typed_;    // the line being typed, kept while walking the history
  bool tabbed_ = false;  // the previous key was Tab (a second Tab lists the candidates)

  bool read_byte(char& c);
  Key read_escape();
  void edit(char c);  // one key typed
  void edit(Key k);   // one key after ESC
  void erase_word();
  void write(const std::string& s);
  void refresh();
  void insert(const std::string& s);
  void walk_history(int delta);
  void complete();
  void add_history(std::string line);
  void load_history();
};

}  // namespace ow::cli
