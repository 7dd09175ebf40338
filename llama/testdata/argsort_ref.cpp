// argsort_ref writes the reference of TestArgsortMatchesStdSort: for seeded
// arrays with many ties, the order std::sort (and std::partial_sort, its
// heapsort) gives their indices under
// ggml's argsort comparison (descending), as g++'s libstdc++ sorts them.
//   g++ -O2 -o /tmp/argsort_ref argsort_ref.cpp && /tmp/argsort_ref | gzip -9 > argsort_ref.txt.gz
#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <vector>

int main() {
    uint64_t x = 88172645463325252ull; // xorshift64
    auto rnd = [&]() { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x; };
    const int sizes[] = {1, 2, 3, 4, 8, 15, 16, 17, 31, 32, 33, 64, 100, 128, 129, 256, 512, 1024};
    for (int n : sizes) {
        for (int rep = 0; rep < 6; rep++) {
            int distinct = 1 + (int)(rnd() % (rep < 3 ? 4 : 64));
            std::vector<float> v(n);
            for (auto &f : v) f = (float)(rnd() % distinct) * 0.25f - 1.0f;
            std::vector<int32_t> idx(n);
            for (int i = 0; i < n; i++) idx[i] = i;
            auto cmp = [&](int32_t a, int32_t b) { return v[a] > v[b]; };
            // Even repetitions: std::sort; odd: std::partial_sort of the whole
            // range, which is the heapsort introsort falls back to.
            if (rep % 2 == 0) std::sort(idx.begin(), idx.end(), cmp);
            else std::partial_sort(idx.begin(), idx.end(), idx.end(), cmp);
            printf("%s %d", rep % 2 == 0 ? "sort" : "heap", n);
            for (float f : v) printf(" %g", f);
            printf(" |");
            for (int32_t i : idx) printf(" %d", i);
            printf("\n");
        }
    }
}
