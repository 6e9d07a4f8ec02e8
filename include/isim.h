/* isim.h: region-of-interest and section markers for `isim trace`.
 *
 * Include this header in the program you trace and bracket the part you want timed:
 *
 *     #include "isim.h"
 *     ...
 *     ISIM_ROI_BEGIN();
 *     run_parallel_phase();
 *     ISIM_ROI_END();
 *
 * and trace with `isim trace --roi markers -- ./program args`. Records before
 * ISIM_ROI_BEGIN() warm the simulated caches without timing; records after ISIM_ROI_END()
 * are skipped. ISIM_SECTION_BEGIN("name") / ISIM_SECTION_END("name") name a phase in the
 * trace (names longer than 48 bytes are cut).
 *
 * Each marker is a single `syscall` instruction with a number no kernel uses: under
 * `isim trace` the tracer sees it; run natively (or under valgrind) it fails harmlessly with
 * ENOSYS, so marked programs need no other change and link against nothing.
 */
#ifndef ISIM_H
#define ISIM_H

#define ISIM_SYS_BASE_ 0x15150000L

static inline void isim_magic_(long op, long a1, long a2, long a3, long a4, long a5, long a6)
{
#if defined(__x86_64__)
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8") = a5;
    register long r9 __asm__("r9") = a6;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(ISIM_SYS_BASE_ + op), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    (void)ret;
#else
    (void)op; (void)a1; (void)a2; (void)a3; (void)a4; (void)a5; (void)a6;
#endif
}

/* Packs up to 48 bytes of a name into six words, little-endian, NUL-padded. */
static inline void isim_section_(long op, const char *name)
{
    long w[6] = {0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 48 && name[i]; i++)
        w[i / 8] |= (long)(unsigned char)name[i] << (8 * (i % 8));
    isim_magic_(op, w[0], w[1], w[2], w[3], w[4], w[5]);
}

#define ISIM_ROI_BEGIN() isim_magic_(12, 0, 0, 0, 0, 0, 0)
#define ISIM_ROI_END() isim_magic_(13, 0, 0, 0, 0, 0, 0)
#define ISIM_SECTION_BEGIN(name) isim_section_(14, (name))
#define ISIM_SECTION_END(name) isim_section_(15, (name))
#define ISIM_SECTION(name) ISIM_SECTION_BEGIN(name)

#endif
