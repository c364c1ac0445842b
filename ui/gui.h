// Entry point of the desktop app, called by `portico` (no arguments) and `portico gui`.
#pragma once

#include <string>

namespace portico::ui {

struct GuiOptions {
    /// A YAML config or a folder to serve; empty: the last project, else a copy of the bundled demo.
    std::string project;
    /// Render the window to this PNG and exit (offscreen when there is no display).
    std::string screenshot;
    /// The tab to show: "sites", "load" or "latency".
    std::string tab;
    /// Before the screenshot, run a load test of this many seconds against the server (0: none;
    /// the load and latency tabs get a 2 s run if none is asked for).
    double demoTraffic = 0;
};

/// Runs the Qt application until the window closes; returns the exit code.
int runGui(int argc, char** argv, const GuiOptions& options);

} // namespace portico::ui
