// The line editor of interactive prompts (see line_editor.h).
#include "line_editor.h"

#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>

namespace ow::cli {

namespace {

constexpr size_t kHistoryKept = 1000;  // lines loaded from the history file

char ctrl(char c) { return static_cast<char>(c & 0x1f); }

// Raw mode for the lifetime of one read_line: keys arrive one by one, unechoed, and Ctrl-C is
// a byte rather than SIGINT. Output processing stays on ("\n" still starts a new row).
struct RawMode {
  int fd;
  termios saved{};
  bool ok;
  explicit RawMode(int f) : fd(f), ok(tcgetattr(f, &saved) == 0) {
    if (!ok) return;
    termios raw = saved;
    raw.c_iflag &= ~static_cast<tcflag_t>(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    raw.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | IEXTEN | ISIG);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    tcsetattr(fd, TCSADRAIN, &raw);  // (TCSAFLUSH would drop keys typed ahead)
  }
  ~RawMode() {
    if (ok) tcsetattr(fd, TCSADRAIN, &saved);
  }
};

std::string common_prefix(const std::vector<std::string>& words) {
  std::string p = words.front();
  for (const std::string& w : words) p.resize(std::mismatch(p.begin(), p.end(), w.begin(), w.end()).first - p.begin());
  return p;
}

}  // namespace

LineEditor::LineEditor(int in_fd, int out_fd, std::string history_file) : in_(in_fd), out_(out_fd), history_file_(std::move(history_file)) {
  load_history();
}

std::optional<std::string> LineEditor::read_line(const std::string& prompt) {
  RawMode raw(in_);
  prompt_ = prompt;
  buf_.clear();
  typed_.clear();
  pos_ = 0;
  hist_pos_ = history_.size();
  tabbed_ = false;
  refresh();
  char c;
  while (read_byte(c)) {
    if (c == '\r' || c == '\n') {
      write("\n");
      add_history(buf_);
      return buf_;
    }
    if (c == ctrl('D') && buf_.empty()) break;  // end of input, as a shell takes it
    edit(c);
    tabbed_ = c == '\t';
    refresh();
  }
  write("\n");
  return std::nullopt;
}

// Every key but Enter and Ctrl-D on an empty line.
void LineEditor::edit(char c) {
  if (c == ctrl('D')) {
    if (pos_ < buf_.size()) buf_.erase(pos_, 1);
  } else if (c == ctrl('C')) {  // abandon the line, as a shell does
    write("^C\n");
    buf_.clear();
    pos_ = 0;
    hist_pos_ = history_.size();
  } else if (c == '\t') complete();
  else if (c == 0x7f || c == ctrl('H')) {
    if (pos_ > 0) buf_.erase(--pos_, 1);
  } else if (c == ctrl('A')) pos_ = 0;
  else if (c == ctrl('E')) pos_ = buf_.size();
  else if (c == ctrl('B')) pos_ -= pos_ > 0;
  else if (c == ctrl('F')) pos_ += pos_ < buf_.size();
  else if (c == ctrl('K')) buf_.erase(pos_);
  else if (c == ctrl('U')) {
    buf_.erase(0, pos_);
    pos_ = 0;
  } else if (c == ctrl('W')) erase_word();
  else if (c == ctrl('P')) walk_history(-1);
  else if (c == ctrl('N')) walk_history(+1);
  else if (c == '\x1b') edit(read_escape());
  else if (static_cast<unsigned char>(c) >= 0x20) insert(std::string(1, c));
}

void LineEditor::edit(Key k) {
  switch (k) {
    case Key::Up: walk_history(-1); break;
    case Key::Down: walk_history(+1); break;
    case Key::Left: pos_ -= pos_ > 0; break;
    case Key::Right: pos_ += pos_ < buf_.size(); break;
    case Key::Home: pos_ = 0; break;
    case Key::End: pos_ = buf_.size(); break;
    case Key::Delete:
      if (pos_ < buf_.size()) buf_.erase(pos_, 1);
      break;
    case Key::Other: break;  // an unknown key is ignored, never inserted as text
  }
}

// Ctrl-W: the word before the cursor, and the spaces between them.
void LineEditor::erase_word() {
  size_t start = pos_;
  while (start > 0 && buf_[start - 1] == ' ') --start;
  while (start > 0 && buf_[start - 1] != ' ') --start;
  buf_.erase(start, pos_ - start);
  pos_ = start;
}

bool LineEditor::read_byte(char& c) {
  while (true) {
    ssize_t n = ::read(in_, &c, 1);
    if (n == 1) return true;
    if (n < 0 && errno == EINTR) continue;  // a signal (SIGWINCH, ...) is not end of input
    return false;
  }
}

// After ESC: CSI "ESC [ params final" or SS3 "ESC O final". Everything of the sequence is read,
// so no part of it reaches the line.
LineEditor::Key LineEditor::read_escape() {
  char c;
  if (!read_byte(c) || (c != '[' && c != 'O')) return Key::Other;
  std::string params;
  while (read_byte(c) && !(c >= 0x40 && c <= 0x7e)) params += c;
  switch (c) {
    case 'A': return Key::Up;
    case 'B': return Key::Down;
    case 'C': return Key::Right;
    case 'D': return Key::Left;
    case 'H': return Key::Home;
    case 'F': return Key::End;
    case '~':
      if (params == "1" || params == "7") return Key::Home;
      if (params == "4" || params == "8") return Key::End;
      if (params == "3") return Key::Delete;
      return Key::Other;
    default: return Key::Other;
  }
}

void LineEditor::write(const std::string& s) {
  for (size_t done = 0; done < s.size();) {
    ssize_t n = ::write(out_, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Redraws the row: prompt, line, clear the rest, cursor back to its place.
void LineEditor::refresh() {
  std::string s = "\r" + prompt_ + buf_ + "\x1b[K";
  if (pos_ < buf_.size()) s += "\x1b[" + std::to_string(buf_.size() - pos_) + "D";
  write(s);
}

void LineEditor::insert(const std::string& s) {
  buf_.insert(pos_, s);
  pos_ += s.size();
}

void LineEditor::walk_history(int delta) {
  if (delta < 0 && hist_pos_ == 0) return;
  if (delta > 0 && hist_pos_ >= history_.size()) return;
  if (hist_pos_ == history_.size()) typed_ = buf_;
  hist_pos_ += delta;
  buf_ = hist_pos_ == history_.size() ? typed_ : history_[hist_pos_];
  pos_ = buf_.size();
}

// Completes the word before the cursor: the single candidate (and a space, unless it ends in
// '=' and wants a value), else the candidates' common prefix; a second Tab lists them.
void LineEditor::complete() {
  if (!complete_) return;
  size_t start = pos_;
  while (start > 0 && buf_[start - 1] != ' ') --start;
  std::string typed = buf_.substr(start, pos_ - start);
  std::vector<std::string> all = complete_(buf_.substr(0, pos_), start), fit;
  for (const std::string& w : all)
    if (w.compare(0, typed.size(), typed) == 0) fit.push_back(w);
  std::sort(fit.begin(), fit.end());
  fit.erase(std::unique(fit.begin(), fit.end()), fit.end());
  if (fit.empty()) return write("\a");
  if (fit.size() == 1) return insert(fit[0].substr(typed.size()) + (fit[0].back() == '=' ? "" : " "));
  std::string common = common_prefix(fit);
  if (common.size() > typed.size()) return insert(common.substr(typed.size()));
  if (!tabbed_) return write("\a");
  std::string list = "\n";
  const size_t shown = 100;
  for (size_t i = 0; i < fit.size() && i < shown; ++i) list += fit[i] + "  ";
  if (fit.size() > shown) list += "... (" + std::to_string(fit.size() - shown) + " more)";
  write(list + "\n");
}

void LineEditor::add_history(std::string line) {
  size_t b = line.find_first_not_of(" \t"), e = line.find_last_not_of(" \t");
  if (b == std::string::npos) return;
  line = line.substr(b, e - b + 1);  // (completion leaves a trailing space)
  if (!history_.empty() && history_.back() == line) return;  // no runs of the same line
  history_.push_back(line);
  if (history_file_.empty()) return;
  std::ofstream f(history_file_, std::ios::app);
  f << line << "\n";  // best effort: a history file we cannot write is no reason to stop
}

void LineEditor::load_history() {
  if (history_file_.empty()) return;
  std::ifstream f(history_file_);
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) history_.push_back(line);
  if (history_.size() <= kHistoryKept) return;
  history_.erase(history_.begin(), history_.end() - kHistoryKept);
  std::ofstream out(history_file_, std::ios::trunc);  // keep the file from growing without end
  for (const std::string& line : history_) out << line << "\n";
}

}  // namespace ow::cli
