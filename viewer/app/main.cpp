// driftscope-view: browse a Driftscope trace. Interactive by default; --screenshot renders a few
// frames offscreen-style into a real window (Xvfb in tests), saves a PNG and exits.
#include <CLI/CLI.hpp>
#include <GLFW/glfw3.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <string>
#include <vector>

#include "app.h"
#include "screenshot.h"

namespace {

void glfw_error(int code, const char* what) {
  fmt::print(stderr, "driftscope-view: GLFW error {}: {}\n", code, what);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"driftscope-view: see where drift begins in a Driftscope trace"};
  std::string trace, compare, screenshot, view = "overview", size = "1600x1000";
  int frames = 4, case_index = 0, seq = -1;
  std::vector<std::string> click_args;
  bool print_state = false;
  cli.add_option("trace", trace, "Trace file (HDF5) to open; the baseline with --compare")->required();
  cli.add_option("--compare", compare, "A second trace (current) to compare against the first (baseline)");
  cli.add_option("--screenshot", screenshot, "Render headless into this PNG and exit");
  cli.add_option("--view", view, "overview | drift | compare | launches | inspect:STEP:LAYER:STAGE:MODE");
  cli.add_option("--size", size, "Window size WxH")->capture_default_str();
  cli.add_option("--frames", frames, "Frames rendered before the screenshot")->capture_default_str();
  cli.add_option("--case", case_index, "Which case of a merged file (driftscope merge) to show, from 0")
      ->capture_default_str();
  cli.add_option("--seq", seq, "Which sequence of a batch run (driftscope run --batch) to show first");
  cli.add_option("--click", click_args,
                 "Headless: click at X,Y (window pixels) before the screenshot; repeat for several clicks, "
                 "played in order")
      ->allow_extra_args(false);
  cli.add_flag("--print-state", print_state,
               "Headless: print the open tab, the inspector's stage and where the last frame drew its "
               "labels, legends and controls");
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Bad usage exits 2, as in `driftscope` (CLI11's own codes would say nothing to a script).
    return cli.exit(e) == 0 ? 0 : 2;
  }

  std::vector<ds::view::Click> clicks;
  for (const auto& a : click_args) {
    const auto c = ds::view::parse_click(a);
    if (!c) {
      fmt::print(stderr, "driftscope-view: bad --click '{}' (X,Y in window pixels, e.g. 420,310)\n", a);
      return 2;
    }
    clicks.push_back(*c);
  }
  if ((!clicks.empty() || print_state) && screenshot.empty()) {
    fmt::print(stderr,
               "driftscope-view: --click and --print-state script a headless run: add --screenshot\n");
    return 2;
  }
  // Every click needs its frames, and the tab a click opens one more to show.
  frames = std::max(frames, 1 + int(clicks.size()) * ds::view::kFramesPerClick + 2);

  std::string err;
  const auto spec = ds::view::parse_view(view, err);
  const auto wh = ds::view::parse_size(size);
  if (!spec || !wh) {
    fmt::print(stderr, "driftscope-view: {}\n",
               spec ? fmt::format("bad --size '{}' (e.g. 1600x1000)", size) : err);
    return 2;
  }
  ds::view::App app;
  app.open(trace, compare, case_index);
  if (seq >= 0 && app.model) {
    if (std::find(app.model->seqs().begin(), app.model->seqs().end(), seq) == app.model->seqs().end()) {
      fmt::print(stderr, "driftscope-view: --seq {}: {} holds sequences {}\n", seq, trace,
                 fmt::join(app.model->seqs(), ", "));
      return 2;
    }
    app.show_seq(seq);
  }
  if (!app.model && app.error.rfind("--case", 0) == 0) {
    // A case that is not there is a usage error, in a window or not.
    fmt::print(stderr, "driftscope-view: {}\n", app.error);
    return 2;
  }
  const bool headless = !screenshot.empty();
  if (headless && (!app.model || (!compare.empty() && !app.compare))) {
    // Headless callers (CI, scripts) need the reason and a distinct exit code, not a picture of it.
    fmt::print(stderr, "driftscope-view: {}\n", app.model ? app.compare_error : app.error);
    return 2;
  }
  app.pending_tab = spec->tab;
  if (spec->target) app.select(*spec->target);

  glfwSetErrorCallback(glfw_error);
  if (!glfwInit()) {
    fmt::print(stderr, "driftscope-view: cannot initialise GLFW (no display? run under xvfb-run)\n");
    return 3;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_RESIZABLE, headless ? GLFW_FALSE : GLFW_TRUE);
  GLFWwindow* win = glfwCreateWindow(wh->first, wh->second, fmt::format("driftscope-view {}", trace).c_str(),
                                     nullptr, nullptr);
  if (!win) {
    fmt::print(stderr, "driftscope-view: cannot create an OpenGL 3.3 window\n");
    glfwTerminate();
    return 3;
  }
  glfwMakeContextCurrent(win);
  glfwSwapInterval(headless ? 0 : 1);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;  // no imgui.ini litter next to traces
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(win, true);
  ImGui_ImplOpenGL3_Init("#version 330");

  int rc = 0;
  for (int frame = 0; !glfwWindowShouldClose(win); ++frame) {
    glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    if (headless) {
      // After the backend: the script, not Xvfb's idle cursor, is the mouse.
      ImGuiIO& io = ImGui::GetIO();
      const auto mouse = ds::view::scripted_mouse(clicks, frame);
      io.MousePos = mouse ? ImVec2(mouse->x, mouse->y) : ImVec2(-FLT_MAX, -FLT_MAX);
      io.MouseDown[0] = mouse && mouse->down;
    }
    ImGui::NewFrame();
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(win, &fw, &fh);
    app.frame(float(fw), float(fh));
    ImGui::Render();
    glViewport(0, 0, fw, fh);
    glClearColor(0.09f, 0.09f, 0.11f, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    if (headless && frame + 1 >= frames) {
      const std::string e = ds::view::write_screenshot(screenshot, fw, fh);
      if (!e.empty())
        fmt::print(stderr, "driftscope-view: {}\n", e);
      else
        fmt::print("screenshot: {} ({}x{})\n", screenshot, fw, fh);
      rc = e.empty() ? 0 : 1;
      if (print_state) {
        fmt::print("state: {}\n", ds::view::describe_state(app.state));
        fmt::print("launches: {}\n", fmt::join(app.shown_launches, ", "));
        for (const auto& line : app.shown) fmt::print("{}\n", line);
      }
      break;
    }
    glfwSwapBuffers(win);
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(win);
  glfwTerminate();
  return rc;
}
