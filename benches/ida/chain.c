/*
 * The chain benchmark of ../shared/bench (p2_chain.py), hand-written for
 * SUNDIALS IDA (6.x API).
 *
 * N rotational inertias J = 0.01 in a line. Neighbours are joined by a spring
 * c = 1e4 and a damper d = 1, the last inertia is tied to the ground the same
 * way, and the first is driven by the torque 10 sin(2 pi 5 t). Everything is
 * at rest at t = 0; t in [0, 1].
 *
 *   T_i = c (phi_i - phi_{i+1}) + d (w_i - w_{i+1})   i = 1..N-1
 *   T_N = c phi_N + d w_N                              (joint to the ground)
 *   phi_i' = w_i
 *   J w_1' = 10 sin(2 pi 5 t) - T_1
 *   J w_i' = T_{i-1} - T_i                             i = 2..N
 *
 * Same problem as rmoc, otherwise:
 *   - the 2N unknowns are all differential; IDA gets the residual
 *     F(t, y, y') = y' - f(t, y) = 0 (the torques T_i are substituted, as
 *     rmoc's causalization does);
 *   - unknowns interleaved, y = (phi_1, w_1, phi_2, w_2, ..., phi_N, w_N), so
 *     the Jacobian dF/dy + cj dF/dy' is banded with upper half-bandwidth 2
 *     and lower half-bandwidth 3 (row of w_i: phi_{i-1} .. w_{i+1}); band LU
 *     (SUNBandMatrix + SUNLinSol_Band) with that analytic Jacobian. In the
 *     order (phi_1..phi_N, w_1..w_N) the bandwidth would be N;
 *   - rtol = 1e-6, atol = 1e-8 (the benchmark's settings; -DRTOL=... and
 *     -DATOL=... for a reference run). Note that rmoc, given only the model's
 *     Tolerance = 1e-6, uses atol = Tolerance * nominal = 1e-6;
 *   - output every 0.01 s: 100 equal intervals of [0, 1], the last point
 *     exactly 1, values interpolated (IDA_NORMAL), integration bounded by the
 *     stop time (IDASetStopTime);
 *   - the initial values are consistent (y = 0, y'(0) = f(0, 0) = 0), so
 *     IDACalcIC is not needed.
 *
 * Usage: chain N [OUT.csv]   (writes time, phi[1..N], w[1..N] on the output
 *                             grid as CSV if given; 101 rows)
 * Prints phi[1], phi[N], w[1] at t = 1 (all phi and w with -DPRINT_ALL=1) and
 * IDA's statistics to stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

#include <ida/ida.h>
#include <nvector/nvector_serial.h>
#include <sundials/sundials_types.h>
#include <sunlinsol/sunlinsol_band.h>
#include <sunmatrix/sunmatrix_band.h>

#define JJ 0.01 /* inertia */
#define C 1.0e4 /* spring */
#define D 1.0   /* damper */
#define PI 3.141592653589793
#define T0 0.0
#define TSTOP 1.0
#ifndef RTOL
#define RTOL 1.0e-6 /* the model's Tolerance; -DRTOL=... for a reference run */
#endif
#ifndef ATOL
#define ATOL 1.0e-8
#endif
#ifndef PRINT_ALL
#define PRINT_ALL 0
#endif
#define NOUT 100 /* output interval 0.01 */

/* half-bandwidths of the Jacobian in the interleaved order */
#define MU 2
#define ML 3

#define PHI(i) (2 * (i))   /* index of phi_{i+1} (0-based i) */
#define W(i) (2 * (i) + 1) /* index of w_{i+1} */

typedef struct {
  sunindextype n;
} Chain;

static sunrealtype drive(sunrealtype t) { return 10.0 * sin(2.0 * PI * 5.0 * t); }

static int reschain(sunrealtype t, N_Vector yy, N_Vector yp, N_Vector rr, void *user_data)
{
  const sunrealtype *y = N_VGetArrayPointer(yy);
  const sunrealtype *dy = N_VGetArrayPointer(yp);
  sunrealtype *r = N_VGetArrayPointer(rr);
  const sunindextype n = ((const Chain *)user_data)->n;
  /* tl: torque of the joint on the left of inertia i (the drive for i = 0) */
  sunrealtype tl = drive(t);
  for (sunindextype i = 0; i < n; i++) {
    const sunrealtype tr = (i + 1 < n)
                               ? C * (y[PHI(i)] - y[PHI(i + 1)]) + D * (y[W(i)] - y[W(i + 1)])
                               : C * y[PHI(i)] + D * y[W(i)];
    r[PHI(i)] = dy[PHI(i)] - y[W(i)];
    r[W(i)] = dy[W(i)] - (tl - tr) / JJ;
    tl = tr;
  }
  return 0;
}

static int jacchain(sunrealtype t, sunrealtype cj, N_Vector yy, N_Vector yp, N_Vector rr,
                    SUNMatrix A, void *user_data, N_Vector t1, N_Vector t2, N_Vector t3)
{
  const sunindextype n = ((const Chain *)user_data)->n;
  const sunrealtype cJ = C / JJ, dJ = D / JJ;
  (void)t; (void)yy; (void)yp; (void)rr; (void)t1; (void)t2; (void)t3;
  SUNMatZero(A);
  for (sunindextype i = 0; i < n; i++) {
    /* r_phi = phi' - w */
    SM_ELEMENT_B(A, PHI(i), PHI(i)) = cj;
    SM_ELEMENT_B(A, PHI(i), W(i)) = -1.0;
    /* r_w = w' - (T_{i-1} - T_i) / J: one spring-damper on the right always
       (to i+1 or to the ground), one on the left unless i is the first */
    const sunrealtype k = (i > 0) ? 2.0 : 1.0;
    SM_ELEMENT_B(A, W(i), PHI(i)) = k * cJ;
    SM_ELEMENT_B(A, W(i), W(i)) = cj + k * dJ;
    if (i > 0) {
      SM_ELEMENT_B(A, W(i), PHI(i - 1)) = -cJ;
      SM_ELEMENT_B(A, W(i), W(i - 1)) = -dJ;
    }
    if (i + 1 < n) {
      SM_ELEMENT_B(A, W(i), PHI(i + 1)) = -cJ;
      SM_ELEMENT_B(A, W(i), W(i + 1)) = -dJ;
    }
  }
  return 0;
}

static void check(int flag, const char *what)
{
  if (flag < 0) {
    fprintf(stderr, "chain: %s failed with flag %d\n", what, flag);
    exit(1);
  }
}

static void check_ptr(const void *p, const char *what)
{
  if (p == NULL) {
    fprintf(stderr, "chain: %s returned NULL\n", what);
    exit(1);
  }
}

static void write_row(FILE *out, sunrealtype t, const sunrealtype *y, sunindextype n)
{
  fprintf(out, "%.17g", t);
  for (sunindextype i = 0; i < n; i++) fprintf(out, ",%.17g", y[PHI(i)]);
  for (sunindextype i = 0; i < n; i++) fprintf(out, ",%.17g", y[W(i)]);
  fputc('\n', out);
}

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: chain N [OUT.csv]\n");
    return 2;
  }
  Chain chain;
  chain.n = (sunindextype)atol(argv[1]);
  if (chain.n < 1) {
    fprintf(stderr, "chain: N must be a positive integer, got '%s'\n", argv[1]);
    return 2;
  }
  const sunindextype n = chain.n, neq = 2 * n;

  SUNContext ctx;
  check(SUNContext_Create(NULL, &ctx), "SUNContext_Create");

  N_Vector yy = N_VNew_Serial(neq, ctx);
  check_ptr(yy, "N_VNew_Serial");
  N_Vector yp = N_VClone(yy);
  check_ptr(yp, "N_VClone");
  N_VConst(0.0, yy); /* at rest */
  N_VConst(0.0, yp); /* f(0, 0) = 0 since sin(0) = 0 */
  sunrealtype *y = N_VGetArrayPointer(yy);

  void *mem = IDACreate(ctx);
  check_ptr(mem, "IDACreate");
  check(IDAInit(mem, reschain, T0, yy, yp), "IDAInit");
  check(IDASStolerances(mem, RTOL, ATOL), "IDASStolerances");
  check(IDASetUserData(mem, &chain), "IDASetUserData");
  check(IDASetStopTime(mem, TSTOP), "IDASetStopTime");
  /* the default of 500 steps per output interval is too few for a tight
     reference run */
  check(IDASetMaxNumSteps(mem, 1000000), "IDASetMaxNumSteps");

  SUNMatrix A = SUNBandMatrix(neq, MU, ML, ctx);
  check_ptr(A, "SUNBandMatrix");
  SUNLinearSolver LS = SUNLinSol_Band(yy, A, ctx);
  check_ptr(LS, "SUNLinSol_Band");
  check(IDASetLinearSolver(mem, LS, A), "IDASetLinearSolver");
  check(IDASetJacFn(mem, jacchain), "IDASetJacFn");

  FILE *out = NULL;
  if (argc > 2) {
    out = fopen(argv[2], "w");
    if (!out) {
      perror(argv[2]);
      return 1;
    }
    fprintf(out, "\"time\"");
    for (sunindextype i = 1; i <= n; i++) fprintf(out, ",\"phi[%ld]\"", (long)i);
    for (sunindextype i = 1; i <= n; i++) fprintf(out, ",\"w[%ld]\"", (long)i);
    fputc('\n', out);
    write_row(out, T0, y, n);
  }

  sunrealtype t = T0;
  for (int k = 1; k <= NOUT; k++) {
    /* rmoc's grid: start + span*k/n, the last point exactly the stop time */
    sunrealtype tout = (k == NOUT) ? TSTOP : T0 + (TSTOP - T0) * k / NOUT;
    check(IDASolve(mem, tout, &t, yy, yp, IDA_NORMAL), "IDASolve");
    if (out) write_row(out, t, y, n);
  }
  if (out) fclose(out);

  long nst, nre, nje, nni, nncf, netf, nsetups, nreLS;
  IDAGetNumSteps(mem, &nst);
  IDAGetNumResEvals(mem, &nre);
  IDAGetNumJacEvals(mem, &nje);
  IDAGetNumNonlinSolvIters(mem, &nni);
  IDAGetNumNonlinSolvConvFails(mem, &nncf);
  IDAGetNumErrTestFails(mem, &netf);
  IDAGetNumLinSolvSetups(mem, &nsetups);
  IDAGetNumLinResEvals(mem, &nreLS);

  printf("name     value at t = %.17g\n", t);
  if (PRINT_ALL) {
    for (sunindextype i = 0; i < n; i++) printf("phi[%ld] %.17g\n", (long)i + 1, y[PHI(i)]);
    for (sunindextype i = 0; i < n; i++) printf("w[%ld] %.17g\n", (long)i + 1, y[W(i)]);
  } else {
    printf("phi[1] %.17g\n", y[PHI(0)]);
    if (n > 1) printf("phi[%ld] %.17g\n", (long)n, y[PHI(n - 1)]);
    printf("w[1] %.17g\n", y[W(0)]);
  }
  printf("IDA %s (band, mu %d, ml %d, rtol %g, atol %g): steps %ld (error test failures %ld), "
         "Newton iterations %ld (convergence failures %ld), residual evaluations %ld (+%ld for "
         "the linear solver), Jacobian evaluations %ld, linear solver setups %ld\n",
         SUNDIALS_VERSION, MU, ML, (double)RTOL, (double)ATOL, nst, netf, nni, nncf, nre, nreLS,
         nje, nsetups);

  IDAFree(&mem);
  SUNLinSolFree(LS);
  SUNMatDestroy(A);
  N_VDestroy(yp);
  N_VDestroy(yy);
  SUNContext_Free(&ctx);
  return 0;
}
