/*
 * Robertson's chemical kinetics, hand-written for SUNDIALS IDA (6.x API).
 *
 * The same problem as tests/models/reference/robertson.rmo, solved the way
 * rmoc solves it:
 *   - the three equations are an ODE y' = f(y); IDA gets the residual
 *     F(t, y, y') = y' - f(y) = 0 (all three components differential);
 *   - rtol = Tolerance = 1e-8; atol_i = Tolerance * nominal_i with the
 *     model's nominal values (1, 1e-10, 1), i.e. atol = (1e-8, 1e-18, 1e-8).
 *     rmoc's error weight is atol_i + rtol*|y_i| in a weighted RMS norm, which
 *     is IDA's weight as well;
 *   - output at rmoc's default grid: 500 equal intervals of [0, StopTime],
 *     the last point exactly StopTime, values interpolated from the
 *     integrator's polynomial (IDA_NORMAL mode), and the integration not
 *     allowed past StopTime (IDASetStopTime; rmoc bounds its last step the
 *     same way);
 *   - analytic dense Jacobian dF/dy + cj*dF/dy'.
 * The initial values are consistent (y'(0) = f(y(0)) is computed directly),
 * so IDACalcIC is not needed.
 *
 * Usage: robertson [OUT.csv]   (writes the output grid as CSV if given)
 * Prints the final values and IDA's statistics to stdout.
 */
#include <stdio.h>
#include <stdlib.h>

#include <ida/ida.h>
#include <nvector/nvector_serial.h>
#include <sundials/sundials_types.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>

#define NEQ 3
#define K1 0.04
#define K2 3.0e7
#define K3 1.0e4
#define T0 0.0
#define TSTOP 4.0e10
#ifndef RTOL
#define RTOL 1.0e-8 /* the model's Tolerance; -DRTOL=... for a reference run */
#endif
#define NOUT 500

static void rhs(const sunrealtype *y, sunrealtype *f)
{
  f[0] = -K1 * y[0] + K3 * y[1] * y[2];
  f[1] = K1 * y[0] - K3 * y[1] * y[2] - K2 * y[1] * y[1];
  f[2] = K2 * y[1] * y[1];
}

/* F(t, y, y') = y' - f(y) */
static int resrob(sunrealtype t, N_Vector yy, N_Vector yp, N_Vector rr, void *user_data)
{
  const sunrealtype *y = N_VGetArrayPointer(yy);
  const sunrealtype *dy = N_VGetArrayPointer(yp);
  sunrealtype *r = N_VGetArrayPointer(rr);
  sunrealtype f[NEQ];
  (void)t;
  (void)user_data;
  rhs(y, f);
  for (int i = 0; i < NEQ; i++) r[i] = dy[i] - f[i];
  return 0;
}

/* J = dF/dy + cj dF/dy' = cj*I - df/dy */
static int jacrob(sunrealtype t, sunrealtype cj, N_Vector yy, N_Vector yp, N_Vector rr,
                  SUNMatrix J, void *user_data, N_Vector t1, N_Vector t2, N_Vector t3)
{
  const sunrealtype *y = N_VGetArrayPointer(yy);
  (void)t; (void)yp; (void)rr; (void)user_data; (void)t1; (void)t2; (void)t3;
  /* df/dy */
  const sunrealtype a00 = -K1, a01 = K3 * y[2], a02 = K3 * y[1];
  const sunrealtype a10 = K1, a11 = -K3 * y[2] - 2.0 * K2 * y[1], a12 = -K3 * y[1];
  const sunrealtype a20 = 0.0, a21 = 2.0 * K2 * y[1], a22 = 0.0;
  SM_ELEMENT_D(J, 0, 0) = cj - a00;
  SM_ELEMENT_D(J, 0, 1) = -a01;
  SM_ELEMENT_D(J, 0, 2) = -a02;
  SM_ELEMENT_D(J, 1, 0) = -a10;
  SM_ELEMENT_D(J, 1, 1) = cj - a11;
  SM_ELEMENT_D(J, 1, 2) = -a12;
  SM_ELEMENT_D(J, 2, 0) = -a20;
  SM_ELEMENT_D(J, 2, 1) = -a21;
  SM_ELEMENT_D(J, 2, 2) = cj - a22;
  return 0;
}

static void check(int flag, const char *what)
{
  if (flag < 0) {
    fprintf(stderr, "robertson: %s failed with flag %d\n", what, flag);
    exit(1);
  }
}

static void check_ptr(const void *p, const char *what)
{
  if (p == NULL) {
    fprintf(stderr, "robertson: %s returned NULL\n", what);
    exit(1);
  }
}

int main(int argc, char **argv)
{
  SUNContext ctx;
  check(SUNContext_Create(NULL, &ctx), "SUNContext_Create");

  N_Vector yy = N_VNew_Serial(NEQ, ctx);
  N_Vector yp = N_VClone(yy);
  N_Vector avtol = N_VClone(yy);
  check_ptr(yy, "N_VNew_Serial");
  check_ptr(yp, "N_VClone");
  check_ptr(avtol, "N_VClone");

  sunrealtype *y = N_VGetArrayPointer(yy);
  sunrealtype *dy = N_VGetArrayPointer(yp);
  y[0] = 1.0;
  y[1] = 0.0;
  y[2] = 0.0;
  rhs(y, dy); /* consistent y'(0) */

  /* atol = Tolerance * nominal, nominal = (1, 1e-10, 1) as in the model */
  sunrealtype *at = N_VGetArrayPointer(avtol);
  at[0] = RTOL * 1.0;
  at[1] = RTOL * 1.0e-10;
  at[2] = RTOL * 1.0;

  void *mem = IDACreate(ctx);
  check_ptr(mem, "IDACreate");
  check(IDAInit(mem, resrob, T0, yy, yp), "IDAInit");
  check(IDASVtolerances(mem, RTOL, avtol), "IDASVtolerances");
  check(IDASetStopTime(mem, TSTOP), "IDASetStopTime");
  /* The run takes ~1500 steps; lift the default limit of 500 per output
     interval (the first output interval, [0, 8e7], holds most of them). */
  check(IDASetMaxNumSteps(mem, 100000), "IDASetMaxNumSteps");

  SUNMatrix A = SUNDenseMatrix(NEQ, NEQ, ctx);
  check_ptr(A, "SUNDenseMatrix");
  SUNLinearSolver LS = SUNLinSol_Dense(yy, A, ctx);
  check_ptr(LS, "SUNLinSol_Dense");
  check(IDASetLinearSolver(mem, LS, A), "IDASetLinearSolver");
  check(IDASetJacFn(mem, jacrob), "IDASetJacFn");

  FILE *out = NULL;
  if (argc > 1) {
    out = fopen(argv[1], "w");
    if (!out) {
      perror(argv[1]);
      return 1;
    }
    fprintf(out, "\"time\",\"y1\",\"y2\",\"y3\",\"der(y1)\",\"der(y2)\",\"der(y3)\"\n");
    fprintf(out, "%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", T0, y[0], y[1], y[2], dy[0],
            dy[1], dy[2]);
  }

  sunrealtype t = T0;
  for (int k = 1; k <= NOUT; k++) {
    /* rmoc's grid: start + span*k/n, the last point exactly the stop time */
    sunrealtype tout = (k == NOUT) ? TSTOP : T0 + (TSTOP - T0) * k / NOUT;
    check(IDASolve(mem, tout, &t, yy, yp, IDA_NORMAL), "IDASolve");
    if (out)
      fprintf(out, "%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", t, y[0], y[1], y[2], dy[0],
              dy[1], dy[2]);
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
  printf("y1       %.12e\n", y[0]);
  printf("y2       %.12e\n", y[1]);
  printf("y3       %.12e\n", y[2]);
  printf("IDA %s: steps %ld (error test failures %ld), Newton iterations %ld (convergence "
         "failures %ld), residual evaluations %ld (+%ld for the linear solver), Jacobian "
         "evaluations %ld, linear solver setups %ld\n",
         SUNDIALS_VERSION, nst, netf, nni, nncf, nre, nreLS, nje, nsetups);

  IDAFree(&mem);
  SUNLinSolFree(LS);
  SUNMatDestroy(A);
  N_VDestroy(avtol);
  N_VDestroy(yp);
  N_VDestroy(yy);
  SUNContext_Free(&ctx);
  return 0;
}
