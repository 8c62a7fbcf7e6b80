/*
 * Cartesian pendulum, hand-written for SUNDIALS IDA (6.x API).
 *
 * The model (tests/models/pendulum.rmo) is the index-3 DAE
 *
 *   x' = vx,  y' = vy,  m vx' = -x/L F,  m vy' = -y/L F - m g,
 *   x^2 + y^2 = L^2,    E = m/2 (vx^2 + vy^2) + m g y,
 *
 * with L = m = 1, g = 9.81, x(0) = sin(60 deg), vx(0) = 0, on [0, 5] at
 * Tolerance 1e-8.
 *
 * Formulation. IDA's BDF with its error test cannot be applied to the index-3
 * system as written (and the usual index-2 fallbacks either drift off the
 * constraint or need the algebraic variables excluded and still lose
 * accuracy), so a careful engineer reduces the index by hand. The index-1
 * form written here is the one rmoc's dummy-derivative reduction arrives at
 * (`rmoc analyze tests/models/pendulum.rmo`: states x, vx; dummy states
 * y, vy, der(x), der(y)):
 *
 *   differential unknowns  x, vx          (the states rmoc keeps)
 *   algebraic unknowns     y, vy, F       (y, vy are rmoc's dummy states)
 *
 *   0 = x' - vx
 *   0 = m vx' + x/L F
 *   0 = x^2 + y^2 - L^2                                  position constraint
 *   0 = x vx + y vy                                      its 1st derivative / 2
 *   0 = m (vx^2 + vy^2) - (x^2 + y^2) F / L - m g y      its 2nd derivative * m/2,
 *                                                        with m vx', m vy' substituted
 *
 * The constraint is kept at position level (so no drift off the circle) and
 * its two derivatives make the system index 1 in (x, vx; y, vy, F). The
 * y-equations y' = vy and m vy' = ... only define the dummy derivatives y'
 * and vy', which nothing else needs, so they drop out, exactly as in rmoc.
 * Choosing x (not y) as the state is valid while y != 0; here y stays in
 * [-1, -0.5] for the whole swing, and rmoc makes the same static choice.
 *
 * Same problem as rmoc, otherwise:
 *   - rtol = 1e-8, atol = Tolerance * nominal = 1e-8 for every unknown (no
 *     nominal values are given);
 *   - rmoc's error test sees only its states (x, vx); the algebraic unknowns
 *     are functions of them. IDA is told the same with IDASetId +
 *     IDASetSuppressAlg (compile with -DSUPPRESS_ALG=0 to include them);
 *   - output on rmoc's default grid, 500 equal intervals of [0, 5], values
 *     interpolated (IDA_NORMAL), integration bounded by the stop time;
 *   - consistent initial values: x(0), vx(0) are fixed; y, vy, F and the
 *     derivatives x'(0), vx'(0) are computed by IDACalcIC (IDA_YA_YDP_INIT)
 *     from the model's start values (y = -0.5, vy = 0, F = 0), as rmoc
 *     solves its initial system from them;
 *   - analytic dense Jacobian dF/du + cj dF/du'.
 *
 * Usage: pendulum [OUT.csv]   (writes the output grid as CSV if given)
 * Prints the final values and IDA's statistics to stdout.
 */
#include <stdio.h>
#include <stdlib.h>

#include <ida/ida.h>
#include <nvector/nvector_serial.h>
#include <sundials/sundials_types.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>

#define NEQ 5
enum { IX, IY, IVX, IVY, IF };

#define L 1.0
#define M 1.0
#define G 9.81
#define T0 0.0
#define TSTOP 5.0
#ifndef RTOL
#define RTOL 1.0e-8 /* the model's Tolerance; -DRTOL=... for a reference run */
#endif
#ifndef SUPPRESS_ALG
#define SUPPRESS_ALG 1
#endif
#define NOUT 500

static int respend(sunrealtype t, N_Vector uu, N_Vector up, N_Vector rr, void *user_data)
{
  const sunrealtype *u = N_VGetArrayPointer(uu);
  const sunrealtype *du = N_VGetArrayPointer(up);
  sunrealtype *r = N_VGetArrayPointer(rr);
  const sunrealtype x = u[IX], y = u[IY], vx = u[IVX], vy = u[IVY], F = u[IF];
  (void)t;
  (void)user_data;
  r[0] = du[IX] - vx;
  r[1] = M * du[IVX] + x / L * F;
  r[2] = x * x + y * y - L * L;
  r[3] = x * vx + y * vy;
  r[4] = M * (vx * vx + vy * vy) - (x * x + y * y) * F / L - M * G * y;
  return 0;
}

static int jacpend(sunrealtype t, sunrealtype cj, N_Vector uu, N_Vector up, N_Vector rr,
                   SUNMatrix J, void *user_data, N_Vector t1, N_Vector t2, N_Vector t3)
{
  const sunrealtype *u = N_VGetArrayPointer(uu);
  const sunrealtype x = u[IX], y = u[IY], vx = u[IVX], vy = u[IVY], F = u[IF];
  (void)t; (void)up; (void)rr; (void)user_data; (void)t1; (void)t2; (void)t3;
  SUNMatZero(J);
  /* r0 = x' - vx */
  SM_ELEMENT_D(J, 0, IX) = cj;
  SM_ELEMENT_D(J, 0, IVX) = -1.0;
  /* r1 = m vx' + x F / L */
  SM_ELEMENT_D(J, 1, IX) = F / L;
  SM_ELEMENT_D(J, 1, IVX) = M * cj;
  SM_ELEMENT_D(J, 1, IF) = x / L;
  /* r2 = x^2 + y^2 - L^2 */
  SM_ELEMENT_D(J, 2, IX) = 2.0 * x;
  SM_ELEMENT_D(J, 2, IY) = 2.0 * y;
  /* r3 = x vx + y vy */
  SM_ELEMENT_D(J, 3, IX) = vx;
  SM_ELEMENT_D(J, 3, IY) = vy;
  SM_ELEMENT_D(J, 3, IVX) = x;
  SM_ELEMENT_D(J, 3, IVY) = y;
  /* r4 = m (vx^2 + vy^2) - (x^2 + y^2) F / L - m g y */
  SM_ELEMENT_D(J, 4, IX) = -2.0 * x * F / L;
  SM_ELEMENT_D(J, 4, IY) = -2.0 * y * F / L - M * G;
  SM_ELEMENT_D(J, 4, IVX) = 2.0 * M * vx;
  SM_ELEMENT_D(J, 4, IVY) = 2.0 * M * vy;
  SM_ELEMENT_D(J, 4, IF) = -(x * x + y * y) / L;
  return 0;
}

static void check(int flag, const char *what)
{
  if (flag < 0) {
    fprintf(stderr, "pendulum: %s failed with flag %d\n", what, flag);
    exit(1);
  }
}

static void check_ptr(const void *p, const char *what)
{
  if (p == NULL) {
    fprintf(stderr, "pendulum: %s returned NULL\n", what);
    exit(1);
  }
}

static sunrealtype energy(const sunrealtype *u)
{
  return 0.5 * M * (u[IVX] * u[IVX] + u[IVY] * u[IVY]) + M * G * u[IY];
}

static void write_row(FILE *out, sunrealtype t, const sunrealtype *u, const sunrealtype *du)
{
  fprintf(out, "%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", t, u[IX], u[IY],
          u[IVX], u[IVY], u[IF], energy(u), du[IX], du[IVX]);
}

int main(int argc, char **argv)
{
  SUNContext ctx;
  check(SUNContext_Create(NULL, &ctx), "SUNContext_Create");

  N_Vector uu = N_VNew_Serial(NEQ, ctx);
  check_ptr(uu, "N_VNew_Serial");
  N_Vector up = N_VClone(uu);
  N_Vector id = N_VClone(uu);
  check_ptr(up, "N_VClone");
  check_ptr(id, "N_VClone");

  sunrealtype *u = N_VGetArrayPointer(uu);
  sunrealtype *du = N_VGetArrayPointer(up);
  /* start values of the model; y, vy, F are guesses for IDACalcIC */
  u[IX] = 0.8660254037844386;
  u[IY] = -0.5;
  u[IVX] = 0.0;
  u[IVY] = 0.0;
  u[IF] = 0.0;
  N_VConst(0.0, up);

  sunrealtype *d = N_VGetArrayPointer(id);
  d[IX] = 1.0; /* differential */
  d[IVX] = 1.0;
  d[IY] = 0.0; /* algebraic */
  d[IVY] = 0.0;
  d[IF] = 0.0;

  void *mem = IDACreate(ctx);
  check_ptr(mem, "IDACreate");
  check(IDAInit(mem, respend, T0, uu, up), "IDAInit");
  /* atol = Tolerance * nominal (1) for every unknown */
  check(IDASStolerances(mem, RTOL, RTOL * 1.0), "IDASStolerances");
  check(IDASetId(mem, id), "IDASetId");
  check(IDASetSuppressAlg(mem, SUPPRESS_ALG), "IDASetSuppressAlg");
  check(IDASetStopTime(mem, TSTOP), "IDASetStopTime");

  SUNMatrix A = SUNDenseMatrix(NEQ, NEQ, ctx);
  check_ptr(A, "SUNDenseMatrix");
  SUNLinearSolver LS = SUNLinSol_Dense(uu, A, ctx);
  check_ptr(LS, "SUNLinSol_Dense");
  check(IDASetLinearSolver(mem, LS, A), "IDASetLinearSolver");
  check(IDASetJacFn(mem, jacpend), "IDASetJacFn");

  const sunrealtype t1 = T0 + (TSTOP - T0) / NOUT;
  check(IDACalcIC(mem, IDA_YA_YDP_INIT, t1), "IDACalcIC");
  check(IDAGetConsistentIC(mem, uu, up), "IDAGetConsistentIC");

  FILE *out = NULL;
  if (argc > 1) {
    out = fopen(argv[1], "w");
    if (!out) {
      perror(argv[1]);
      return 1;
    }
    fprintf(out, "\"time\",\"x\",\"y\",\"vx\",\"vy\",\"F\",\"E\",\"der(x)\",\"der(vx)\"\n");
    write_row(out, T0, u, du);
  }

  sunrealtype t = T0;
  for (int k = 1; k <= NOUT; k++) {
    /* rmoc's grid: start + span*k/n, the last point exactly the stop time */
    sunrealtype tout = (k == NOUT) ? TSTOP : T0 + (TSTOP - T0) * k / NOUT;
    check(IDASolve(mem, tout, &t, uu, up, IDA_NORMAL), "IDASolve");
    if (out) write_row(out, t, u, du);
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
  printf("x        %.12e\n", u[IX]);
  printf("y        %.12e\n", u[IY]);
  printf("vx       %.12e\n", u[IVX]);
  printf("vy       %.12e\n", u[IVY]);
  printf("F        %.12e\n", u[IF]);
  printf("E        %.12e\n", energy(u));
  printf("IDA %s: steps %ld (error test failures %ld), Newton iterations %ld (convergence "
         "failures %ld), residual evaluations %ld (+%ld for the linear solver), Jacobian "
         "evaluations %ld, linear solver setups %ld\n",
         SUNDIALS_VERSION, nst, netf, nni, nncf, nre, nreLS, nje, nsetups);

  IDAFree(&mem);
  SUNLinSolFree(LS);
  SUNMatDestroy(A);
  N_VDestroy(id);
  N_VDestroy(up);
  N_VDestroy(uu);
  SUNContext_Free(&ctx);
  return 0;
}
