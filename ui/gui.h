// Entry point of the desktop app, called by `portico` (no arguments) and `portico gui`.
#pragma once

#include <string>

namespace portico::ui {

struct GuiOptions {
    /// A YAML config or a folder to serve; empty: the last project, else a copy of the bundled demo.
    std::string project;
    /// Render the window to this PNG and exit (offscreen when there is no display).
    std::string screenshot;
    /// The tab to show: "sites", "traffic", "inspector", "load", "suite" (the Load test tab after a
    /// suite run, its Suite view) or "latency".
    std::string tab;
    /// Before the screenshot, serve this many seconds of generated traffic (0: none; the load and
    /// latency tabs get two 2 s load tests, overlaid, the suite tab 0.3 s per route and the traffic
    /// and inspector tabs 2 s of mixed demo requests if none is asked for).
    double demoTraffic = 0;
    /// > 0: measure the event loop's responsiveness (lateness of a 10 ms timer) while the load
    /// generator drives the in-process server at full speed for this many seconds, print
    /// p50/p99/max and exit.
    double measureResponsiveness = 0;
};

/// Runs the Qt application until the window closes; returns the exit code.
int runGui(int argc, char** argv, const GuiOptions& options);

} // namespace portico::ui
