// SPDX-License-Identifier: BSD-3-Clause
// Copyright (c) 2026 corevia developers
// hello.c in C++: the public headers carry extern "C", so C++ programs
// include and link them as they are.
//   c++ hello.cc $(pkg-config --cflags --libs corevia) -o hello++
//   cvia-run -n 4 ./hello++
#include <cstdio>
#include <string>
#include <vector>

#include <corevia/corevia.h>

int main(int argc, char **argv)
{
    int rc = cvia_init(&argc, &argv);
    if (rc) {
        std::fprintf(stderr, "hello++: cvia_init: %s\n", cvia_strerror(rc));
        return 1;
    }
    const int rank = cvia_rank(), size = cvia_size();
    if (rank != 0) {
        const std::string msg = "hello++ from rank " + std::to_string(rank) + " of " +
                                std::to_string(size);
        rc = cvia_send(msg.c_str(), msg.size() + 1, 0, 0);
    } else {
        std::vector<char> buf(128);
        std::printf("hello++ from rank 0 of %d\n", size);
        for (int src = 1; src < size && !rc; src++) {
            cvia_status_t st;
            rc = cvia_recv(buf.data(), buf.size(), src, 0, &st);
            if (!rc)
                std::printf("%s\n", buf.data());
        }
    }
    if (rc)
        std::fprintf(stderr, "hello++: rank %d: %s\n", rank, cvia_strerror(rc));
    const int frc = cvia_finalize();
    return rc || frc ? 1 : 0;
}
