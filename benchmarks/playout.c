/* A plain C random playout of Escoba: the reference limit that benchmarks/bench_engine.py measures
 * the engine against (it compiles this file with `cc -O2` and runs it on the same core).
 *
 * The same game as escoba_env's standard rules (docs/rules.md): 2 players, 40 cards as bits of a
 * 64-bit mask (card id 4 * (value - 1) + suit), three cards a seat, four on the table with the
 * initial fifteen (one or two escobas to the dealer), captures summing to fifteen, escobas, the last
 * capturer takes the table, scoring by most cards, most oros, the velo, most sevens and escobas,
 * games to 21 with one side strictly ahead, then the next game. Actions follow the engine's
 * play/take scheme: play a card from hand; where it has several capture options the same seat
 * names table cards one at a time (those in some remaining option and not in all of them) until one
 * option remains. Every action is uniformly random among the legal ones, and one action is one
 * step, as in bench_engine.py. Capture options are enumerated by a depth-first search over the
 * table cards, pruned by the sum (no table of tables).
 *
 * Usage: playout STEPS SEED. Prints "steps cpu_seconds wall_seconds games rounds".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef uint64_t u64;

static u64 rng_state;

static inline u64 next_u64(void) { /* SplitMix64 */
    u64 z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline int value_of(int card) { return card / 4 + 1; }

static inline int pick_bit(u64 mask) { /* a uniformly random set bit of a non-empty mask */
    int k = (int)(((next_u64() >> 11) * (double)__builtin_popcountll(mask)) * (1.0 / 9007199254740992.0));
    while (k-- > 0) mask &= mask - 1;
    return __builtin_ctzll(mask);
}

/* Options: subsets of `cards` (ids in cards[0..n-1]) summing to `target`; count, union, intersection. */
typedef struct { long count; u64 uni, inter; } Options;

static void search(const int *cards, int n, int i, int target, u64 chosen, Options *o) {
    if (target == 0) {
        o->count++;
        o->uni |= chosen;
        o->inter &= chosen;
        return;
    }
    for (; i < n; i++) {
        int v = value_of(cards[i]);
        if (v <= target) search(cards, n, i + 1, target - v, chosen | (1ULL << cards[i]), o);
    }
}

static Options options(u64 table, u64 taken, int target) {
    int cards[40], n = 0;
    Options o = {0, 0, ~0ULL};
    for (u64 m = table & ~taken; m; m &= m - 1) cards[n++] = __builtin_ctzll(m);
    if (target >= 0) search(cards, n, 0, target, 0, &o);
    if (o.count) { o.uni |= taken; o.inter |= taken; }
    return o;
}

typedef struct {
    u64 hands[2], table, piles[2], taken;
    int deck[40], stock_pos, dealer, to_act, last_capturer, pending, taken_value, hand_count;
    int escobas[2], scores[2];
    u64 legal;
} Game;

static void deal_hands(Game *g) {
    int seat = g->dealer;
    for (int j = 0; j < 2; j++) {
        seat ^= 1;
        g->hands[seat] = (1ULL << g->deck[g->stock_pos + j]) | (1ULL << g->deck[g->stock_pos + j + 2])
                         | (1ULL << g->deck[g->stock_pos + j + 4]);
    }
    g->stock_pos += 6;
    g->hand_count = 6;
    g->legal = g->hands[g->to_act];
}

static int fifteen_groups(const int *t) { /* initial fifteen: 2, 1 or 0 escobas for four table cards */
    int ok[16];
    for (int s = 0; s < 16; s++) {
        int sum = 0;
        for (int j = 0; j < 4; j++) if (s >> j & 1) sum += value_of(t[j]);
        ok[s] = s && sum == 15;
    }
    for (int s = 1; s < 15; s++) if (ok[s] && ok[15 - s]) return 2;
    return ok[15];
}

static void start_round(Game *g) {
    for (int i = 0; i < 40; i++) g->deck[i] = i;
    for (int i = 39; i > 0; i--) { /* Fisher-Yates */
        int j = (int)(next_u64() % (u64)(i + 1));
        int c = g->deck[i]; g->deck[i] = g->deck[j]; g->deck[j] = c;
    }
    g->piles[0] = g->piles[1] = 0;
    g->escobas[0] = g->escobas[1] = 0;
    g->last_capturer = -1;
    g->pending = -1;
    g->taken = 0;
    g->taken_value = 0;
    const int *t = g->deck + 6;
    g->table = (1ULL << t[0]) | (1ULL << t[1]) | (1ULL << t[2]) | (1ULL << t[3]);
    int esc = fifteen_groups(t);
    if (esc) {
        g->piles[g->dealer] |= g->table;
        g->escobas[g->dealer] += esc;
        g->last_capturer = g->dealer;
        g->table = 0;
    }
    g->stock_pos = 0;
    g->to_act = g->dealer ^ 1;
    deal_hands(g);
    g->stock_pos = 10;
}

static int strict(int a, int b) { return a > b ? 0 : (b > a ? 1 : -1); }

static int end_round(Game *g) { /* returns 1 where the game is over */
    if (g->last_capturer >= 0) g->piles[g->last_capturer] |= g->table;
    g->table = 0;
    const u64 oros = 0x1111111111ULL, sevens = 0xFULL << 24;
    int w;
    if ((w = strict(__builtin_popcountll(g->piles[0]), __builtin_popcountll(g->piles[1]))) >= 0) g->scores[w]++;
    if ((w = strict(__builtin_popcountll(g->piles[0] & oros), __builtin_popcountll(g->piles[1] & oros))) >= 0)
        g->scores[w]++;
    for (int s = 0; s < 2; s++) g->scores[s] += (int)(g->piles[s] >> 24 & 1);
    if ((w = strict(__builtin_popcountll(g->piles[0] & sevens), __builtin_popcountll(g->piles[1] & sevens))) >= 0)
        g->scores[w]++;
    g->scores[0] += g->escobas[0];
    g->scores[1] += g->escobas[1];
    int best = g->scores[0] > g->scores[1] ? g->scores[0] : g->scores[1];
    return best >= 21 && g->scores[0] != g->scores[1];
}

/* One action; returns 1 where a round ended, 2 where the game ended too. */
static int step(Game *g, int a) {
    int seat = g->to_act, card;
    u64 taken;
    int taken_value;
    if (g->pending < 0) {
        card = a;
        g->hands[seat] &= ~(1ULL << a);
        g->hand_count--;
        taken = 0;
        taken_value = 0;
    } else {
        card = g->pending;
        taken = g->taken | (1ULL << a);
        taken_value = g->taken_value + value_of(a);
    }
    Options o = options(g->table, taken, 15 - value_of(card) - taken_value);
    if (o.count > 1) {
        g->pending = card;
        g->taken = taken;
        g->taken_value = taken_value;
        g->legal = o.uni & ~o.inter;
        return 0;
    }
    if (o.count == 0) {
        g->table |= 1ULL << card;
    } else {
        g->table &= ~o.inter;
        g->piles[seat] |= o.inter | (1ULL << card);
        if (!g->table) g->escobas[seat]++;
        g->last_capturer = seat;
    }
    g->pending = -1;
    g->taken = 0;
    g->taken_value = 0;
    g->to_act = seat ^ 1;
    if (g->hand_count) {
        g->legal = g->hands[g->to_act];
        return 0;
    }
    if (g->stock_pos < 40) {
        deal_hands(g);
        return 0;
    }
    int over = end_round(g);
    if (over) {
        g->scores[0] = g->scores[1] = 0;
        g->dealer = (int)(next_u64() & 1);
    } else {
        g->dealer ^= 1;
    }
    start_round(g);
    return over ? 2 : 1;
}

static double seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    long steps = argc > 1 ? atol(argv[1]) : 10000000L;
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    Game g = {0};
    g.dealer = (int)(next_u64() & 1);
    start_round(&g);
    long games = 0, rounds = 0;
    double c0 = seconds(CLOCK_PROCESS_CPUTIME_ID), w0 = seconds(CLOCK_MONOTONIC);
    for (long i = 0; i < steps; i++) {
        int r = step(&g, pick_bit(g.legal));
        rounds += r > 0;
        games += r == 2;
    }
    double cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - c0, wall = seconds(CLOCK_MONOTONIC) - w0;
    printf("%ld %.6f %.6f %ld %ld\n", steps, cpu, wall, games, rounds);
    return 0;
}
