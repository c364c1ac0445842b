// Entry point of the `portico` executable (placeholder until the engine lands).
#include <cstdio>
int main() { std::puts("portico " PORTICO_VERSION); return 0; }
