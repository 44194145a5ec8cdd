/* A shared object whose constructor calls execv: preloaded after
 * libposixrt.so (LD_PRELOAD="libposixrt.so exec_from_constructor.so"), the
 * loader runs this constructor before libposixrt's load-time code, and the
 * execv it calls is libposixrt's interposer. The exec must work (the new
 * image prints "ok"), not fail with ENOSYS for want of the next definition.
 * EXEC_FROM_CONSTRUCTOR names the program to exec; it is cleared first, so
 * the new image does not exec again. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void exec_early(void)
{
    const char *prog = getenv("EXEC_FROM_CONSTRUCTOR");
    char copy[4096];
    char *argv[3];
    if (prog == NULL || strlen(prog) >= sizeof copy)
        return;
    strcpy(copy, prog);
    unsetenv("EXEC_FROM_CONSTRUCTOR");
    argv[0] = copy;
    argv[1] = "ok";
    argv[2] = NULL;
    execv(copy, argv);
    printf("execv from a constructor failed: %s\n", strerror(errno));
    fflush(stdout);
    _exit(1);
}
