/* A shared object whose constructor calls execv (or execl, execle, execlp):
 * preloaded after libposixrt.so (LD_PRELOAD="libposixrt.so
 * exec_from_constructor.so"), the loader runs this constructor before
 * libposixrt's load-time code, and the exec it calls is libposixrt's
 * interposer. The exec must work (the new image prints "ok"), not fail with
 * ENOSYS for want of the next definition. EXEC_FROM_CONSTRUCTOR names the
 * program to exec, EXEC_FROM_CONSTRUCTOR_CALL the call (execv when unset);
 * both are cleared first, so the new image does not exec again. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

__attribute__((constructor)) static void exec_early(void)
{
    const char *prog = getenv("EXEC_FROM_CONSTRUCTOR");
    const char *call = getenv("EXEC_FROM_CONSTRUCTOR_CALL");
    char copy[4096], how[16] = "execv";
    char *argv[3];
    if (prog == NULL || strlen(prog) >= sizeof copy)
        return;
    strcpy(copy, prog);
    if (call != NULL && strlen(call) < sizeof how)
        strcpy(how, call);
    unsetenv("EXEC_FROM_CONSTRUCTOR");
    unsetenv("EXEC_FROM_CONSTRUCTOR_CALL");
    argv[0] = copy;
    argv[1] = "ok";
    argv[2] = NULL;
    if (strcmp(how, "execl") == 0)
        execl(copy, copy, "ok", (char *)NULL);
    else if (strcmp(how, "execle") == 0)
        execle(copy, copy, "ok", (char *)NULL, environ);
    else if (strcmp(how, "execlp") == 0)
        execlp(copy, copy, "ok", (char *)NULL);
    else
        execv(copy, argv);
    printf("%s from a constructor failed: %s\n", how, strerror(errno));
    fflush(stdout);
    _exit(1);
}
